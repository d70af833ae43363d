localrules:
    analyze,
    costs_by_model,
    plot_accuracy,
    replicates,


rule analyze:
    input:
        judgments=plan.analysis.backbone_judgments,
        predictions=plan.analysis.backbone_predictions,
        validation=plan.analysis.judge_validation_file(),
        held_out=lambda w: [layout.society(w.backbone, "split")] if plan.societies.held_out_splits() else [],
    output:
        accuracy=layout.analysis("{backbone}", "accuracy.parquet"),
        table_csv=layout.analysis("{backbone}", "table.csv"),
        table_md=layout.analysis("{backbone}", "table.md"),
    log:
        "logs/{backbone}/analyze.log",
    params:
        **stage("lmad.stages.analyze:analyze"),
        backbone=lambda w: w.backbone,
        held_out_size=plan.societies.held_out_size(),
        **plan.analysis.run_scope("methods", "datasets", "metric"),
        bootstrap_resamples=config["analysis"]["bootstrap_resamples"],
        seed=config["seed"],
    conda:
        "../envs/pipeline.yaml"
    shell:
        STAGE


rule plot_accuracy:
    input:
        accuracy=layout.analysis("{backbone}", "accuracy.parquet"),
        validation=plan.analysis.judge_validation_file(),
    output:
        png=report(
            layout.analysis("{backbone}", "accuracy.png"),
            caption="../config/report/accuracy.rst",
            category="Accuracy",
        ),
        pdf=layout.analysis("{backbone}", "accuracy.pdf"),
    log:
        "logs/{backbone}/plot_accuracy.log",
    params:
        **stage("lmad.stages.analyze:plot_accuracy"),
        **plan.analysis.run_scope("methods", "datasets", "metric"),
    conda:
        "../envs/pipeline.yaml"
    shell:
        STAGE


# Seeded replicates (config `seeds`): each backbone's headline accuracy, mean ± sample SD over
# its replicates' analyze tables.
rule replicates:
    input:
        accuracies=plan.analysis.replicate_accuracies,
        validation=plan.analysis.judge_validation_file(),
    output:
        table=layout.analysis("{model}", "replicates.parquet"),
        csv=layout.analysis("{model}", "replicates.csv"),
        md=layout.analysis("{model}", "replicates.md"),
    log:
        "logs/{model}/replicates.log",
    wildcard_constraints:
        model="|".join(map(re.escape, config["backbones"])),
    params:
        **stage("lmad.stages.analyze:replicates"),
        backbone=lambda w: w.model,
        **plan.analysis.run_scope("methods", "datasets", "metric"),
    conda:
        "../envs/pipeline.yaml"
    shell:
        STAGE


# Calls and tokens of every method split by the model that made them (a committee's members and
# role models; a single model's one row each), checked against the predictions' totals.
rule costs_by_model:
    input:
        predictions=plan.analysis.backbone_predictions,
        calls=plan.analysis.cost_call_tables,
    output:
        table=layout.analysis("{backbone}", "costs_by_model.parquet"),
        md=layout.analysis("{backbone}", "costs_by_model.md"),
    log:
        "logs/{backbone}/costs_by_model.log",
    params:
        **stage("lmad.stages.costs:costs_by_model"),
        backbone=lambda w: w.backbone,
        methods=config["methods"],
        members=lambda w: plan.analysis.cost_models(w.backbone)["members"],
        roles=lambda w: plan.analysis.cost_models(w.backbone)["roles"],
    conda:
        "../envs/pipeline.yaml"
    shell:
        STAGE
