localrules:
    analyze,
    plot_accuracy,
    replicates,


rule analyze:
    input:
        judgments=backbone_judgments,
        predictions=backbone_predictions,
        validation=judge_validation_file(),
    output:
        accuracy=layout.analysis("{backbone}", "accuracy.parquet"),
        table_csv=layout.analysis("{backbone}", "table.csv"),
        table_md=layout.analysis("{backbone}", "table.md"),
    log:
        "logs/{backbone}/analyze.log",
    params:
        backbone=lambda w: w.backbone,
        **run_scope("methods", "datasets", "metric"),
        bootstrap_resamples=config["analysis"]["bootstrap_resamples"],
        seed=config["seed"],
    conda:
        "../envs/pipeline.yaml"
    script:
        "../workflow/scripts/analyze.py"


rule plot_accuracy:
    input:
        accuracy=layout.analysis("{backbone}", "accuracy.parquet"),
        validation=judge_validation_file(),
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
        **run_scope("methods", "datasets", "metric"),
    conda:
        "../envs/pipeline.yaml"
    script:
        "../workflow/scripts/plot_accuracy.py"


# Seeded replicates (config `seeds`): each backbone's headline accuracy, mean ± sample SD over
# its replicates' analyze tables.
rule replicates:
    input:
        accuracies=lambda w: [layout.analysis(layout.run_name(w.model, s), "accuracy.parquet") for s in SEEDS],
        validation=judge_validation_file(),
    output:
        table=layout.analysis("{model}", "replicates.parquet"),
        csv=layout.analysis("{model}", "replicates.csv"),
        md=layout.analysis("{model}", "replicates.md"),
    log:
        "logs/{model}/replicates.log",
    wildcard_constraints:
        model="|".join(map(re.escape, config["backbones"])),
    params:
        backbone=lambda w: w.model,
        **run_scope("methods", "datasets", "metric"),
    conda:
        "../envs/pipeline.yaml"
    script:
        "../workflow/scripts/replicates.py"
