rule generate:
    input:
        questions="results/data/{dataset}.parquet",
        prompt=config["prompts"]["solver"],
        weights=lambda w: model_files(w.backbone),
    output:
        samples="results/{backbone}/{dataset}/samples/{stage}.parquet",
    log:
        "logs/{backbone}/{dataset}/generate_{stage}.log",
    benchmark:
        "benchmarks/{backbone}/{dataset}/generate_{stage}.tsv"
    params:
        model=lambda w: model_spec(w.backbone),
        cache_dir=config["cache_dir"],
        stage=lambda w: w.stage,
        temperatures=lambda w: stage_temperatures(w.stage),
        max_tokens=config["solver"]["max_tokens"],
        seed=config["seed"],
    conda:
        "../envs/pipeline.yaml"
    threads: lambda w: model_threads(w.backbone)
    resources:
        **model_resources(),
    script:
        "../workflow/scripts/generate.py"


rule predict:
    input:
        questions="results/data/{dataset}.parquet",
        samples=lambda w: f"results/{w.backbone}/{w.dataset}/samples/{PREDICT_SOURCE[w.method]}.parquet",
    output:
        predictions="results/{backbone}/{dataset}/predictions/{method}.parquet",
    log:
        "logs/{backbone}/{dataset}/predict_{method}.log",
    params:
        method=lambda w: w.method,
    conda:
        "../envs/pipeline.yaml"
    script:
        "../workflow/scripts/predict.py"
