# LLM judge (configurable model, deterministic decoding) plus official EM/F1: one job per
# backbone judges every method's predictions on every dataset in one batch.


rule judge:
    input:
        questions=plan.configured_questions(),
        predictions=plan.backbone_predictions,
        prompt=config["prompts"]["judge"],
        weights=plan.model_files(config["judge"]["model"]),
    output:
        judgments=[layout.judgments("{backbone}", d) for d in DATASETS],
    log:
        "logs/{backbone}/judge.log",
    benchmark:
        "logs/benchmarks/{backbone}/judge.tsv"
    params:
        model=plan.model_spec(config["judge"]["model"]),
        cache_dir=config["cache_dir"],
        max_tokens=config["judge"]["max_tokens"],
    conda:
        "../envs/pipeline.yaml"
    threads: plan.model_threads(config["judge"]["model"])
    resources:
        **plan.model_resources(config["judge"]["model"]),
    script:
        "../workflow/scripts/judge.py"


# The judge's known-answer validation (docs/analysis.md "Judge validation"): a seeded battery built from
# the run's questions, judged with the judge rule's exact prompt, model and decoding.
rule judge_validation:
    input:
        questions=plan.configured_questions(),
        prompt=config["prompts"]["judge"],
        weights=plan.model_files(config["judge"]["model"]),
    output:
        battery=plan.judge_validation_file("battery.parquet"),
        validation=plan.judge_validation_file("validation.parquet"),
        report=plan.judge_validation_file("validation.md"),
    log:
        f"logs/judge_validation/{config['judge']['model']}.log",
    params:
        **plan.judge_params(),
        max_tokens=config["judge"]["max_tokens"],
        seed=config["seed"],
        **config["judge"]["validation"],
    conda:
        "../envs/pipeline.yaml"
    threads: plan.model_threads(config["judge"]["model"])
    resources:
        **plan.model_resources(config["judge"]["model"]),
    script:
        "../workflow/scripts/judge_validation.py"
