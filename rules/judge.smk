rule judge:
    input:
        questions="results/data/{dataset}.parquet",
        predictions=judge_inputs,
        prompt=config["prompts"]["judge"],
        weights=model_files(config["judge"]["model"]),
    output:
        judgments="results/{backbone}/{dataset}/judgments.parquet",
    log:
        "logs/{backbone}/{dataset}/judge.log",
    benchmark:
        "benchmarks/{backbone}/{dataset}/judge.tsv"
    params:
        model=model_spec(config["judge"]["model"]),
        cache_dir=config["cache_dir"],
        max_tokens=config["judge"]["max_tokens"],
    conda:
        "../envs/pipeline.yaml"
    threads: model_threads(config["judge"]["model"])
    resources:
        **model_resources(config["judge"]["model"]),
    script:
        "../workflow/scripts/judge.py"
