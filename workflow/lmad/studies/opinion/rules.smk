# Opinion questions (GlobalOpinionQA; docs/task-families.md "Scoring") have no gold, so accuracy
# is not reported on them: rule opinion_table compares each method's answer distribution with
# every surveyed country's (lmad.studies.opinion.stages). One job per backbone, Parquet in, no model
# calls; planned, and a target of `rule all`, only when a dataset's questions are opinions.

OPINION = plan.study("opinion")

if OPINION.datasets:

    localrules:
        opinion_table,

    rule opinion_table:
        input:
            unpack(OPINION.inputs),
        output:
            table=layout.analysis("{backbone}", "opinion.parquet"),
            table_md=layout.analysis("{backbone}", "opinion.md"),
        log:
            "logs/{backbone}/opinion.log",
        params:
            **stage("lmad.studies.opinion.stages:opinion_table"),
            backbone=lambda w: w.backbone,
            datasets=OPINION.datasets,
            methods=config["methods"],
            round_units=OPINION.round_units(),
            prediction_units=OPINION.prediction_units(),
        conda:
            "../../../../envs/pipeline.yaml"
        shell:
            STAGE
