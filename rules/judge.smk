# LLM judge (configurable model, deterministic decoding) plus official EM/F1: one job per
# backbone judges every method's predictions on every dataset in one batch.


rule judge:
    input:
        questions=configured_questions(),
        predictions=backbone_predictions,
        prompt=config["prompts"]["judge"],
        weights=model_files(config["judge"]["model"]),
    output:
        judgments=[layout.judgments("{backbone}", d) for d in DATASETS],
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


# The judge's known-answer validation (README "Judge validation"): a seeded battery built from
# the run's questions, judged with the judge rule's exact prompt, model and decoding.
rule judge_validation:
    input:
        questions=configured_questions(),
        prompt=config["prompts"]["judge"],
        weights=model_files(config["judge"]["model"]),
    output:
        battery=judge_validation_file("battery.parquet"),
        validation=judge_validation_file("validation.parquet"),
        report=judge_validation_file("validation.md"),
    log:
        f"logs/judge_validation/{config['judge']['model']}.log",
    params:
        **judge_params(),
        max_tokens=config["judge"]["max_tokens"],
        seed=config["seed"],
        **config["judge"]["validation"],
    conda:
        "../envs/pipeline.yaml"
    threads: model_threads(config["judge"]["model"])
    resources:
        **model_resources(config["judge"]["model"]),
    script:
        "../workflow/scripts/judge_validation.py"
