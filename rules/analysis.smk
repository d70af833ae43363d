localrules:
    analyze,
    plot_accuracy,


rule analyze:
    input:
        judgments=analysis_judgments,
        predictions=analysis_predictions,
        validation=judge_validation_file(),
    output:
        accuracy="results/{backbone}/analysis/accuracy.parquet",
        table_csv="results/{backbone}/analysis/table.csv",
        table_md="results/{backbone}/analysis/table.md",
    log:
        "logs/{backbone}/analyze.log",
    params:
        backbone=lambda w: w.backbone,
        methods=config["methods"],
        datasets=list(config["datasets"]),
        bootstrap_resamples=config["analysis"]["bootstrap_resamples"],
        metric=config["analysis"]["metric"],
        seed=config["seed"],
    conda:
        "../envs/pipeline.yaml"
    script:
        "../workflow/scripts/analyze.py"


rule plot_accuracy:
    input:
        accuracy="results/{backbone}/analysis/accuracy.parquet",
        validation=judge_validation_file(),
    output:
        png=report(
            "results/{backbone}/analysis/accuracy.png",
            caption="../config/report/accuracy.rst",
            category="Accuracy",
        ),
        pdf="results/{backbone}/analysis/accuracy.pdf",
    log:
        "logs/{backbone}/plot_accuracy.log",
    params:
        methods=config["methods"],
        datasets=list(config["datasets"]),
        metric=config["analysis"]["metric"],
    conda:
        "../envs/pipeline.yaml"
    script:
        "../workflow/scripts/plot_accuracy.py"
