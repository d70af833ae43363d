# LLM judge (configurable model, deterministic decoding) plus official EM/F1: one job per
# backbone judges every method's predictions on every dataset in one batch.


rule judge:
    input:
        questions=expand("results/data/{dataset}.parquet", dataset=config["datasets"]),
        predictions=judge_inputs,
        prompt=config["prompts"]["judge"],
        weights=model_files(config["judge"]["model"]),
    output:
        judgments=expand("results/{{backbone}}/{dataset}/judgments.parquet", dataset=config["datasets"]),
    log:
        "logs/{backbone}/judge.log",
    benchmark:
        "benchmarks/{backbone}/judge.tsv"
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
