# Opinion questions (GlobalOpinionQA; docs/task-families.md "Scoring") have no gold, so accuracy
# is not reported on them: rule opinion_table compares each method's answer distribution with
# every surveyed country's (lmad.stages.opinion). One job per backbone, Parquet in, no model
# calls; planned, and a target of `rule all`, only when a dataset's questions are opinions.

if plan.opinion_datasets:

    localrules:
        opinion_table,

    rule opinion_table:
        input:
            unpack(plan.opinion_inputs),
        output:
            table=layout.analysis("{backbone}", "opinion.parquet"),
            table_md=layout.analysis("{backbone}", "opinion.md"),
        log:
            "logs/{backbone}/opinion.log",
        params:
            **stage("lmad.stages.opinion:opinion_table"),
            backbone=lambda w: w.backbone,
            datasets=plan.opinion_datasets,
            methods=config["methods"],
            round_units=plan.opinion_round_units(),
            prediction_units=plan.opinion_prediction_units(),
        conda:
            "../envs/pipeline.yaml"
        script:
            "../workflow/scripts/stage.py"
