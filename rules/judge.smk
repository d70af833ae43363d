# LLM judge (configurable model, deterministic decoding) plus official EM/F1: one job per
# backbone judges every method's predictions on every dataset in one batch.


rule judge:
    input:
        questions=plan.questions.configured(),
        predictions=plan.analysis.backbone_predictions,
        prompt=config["prompts"]["judge"],
        **JUDGE_MODEL.input,
    output:
        judgments=[layout.judgments("{backbone}", d) for d in DATASETS],
    log:
        "logs/{backbone}/judge.log",
    benchmark:
        "logs/benchmarks/{backbone}/judge.tsv"
    params:
        **stage("lmad.stages.judge:judge"),
        **JUDGE_MODEL.params,
        max_tokens=config["judge"]["max_tokens"],
    conda:
        "../envs/pipeline.yaml"
    threads: JUDGE_MODEL.threads
    resources:
        **JUDGE_MODEL.resources,
    shell:
        STAGE


# The judge's known-answer validation (docs/analysis.md "Judge validation"): a seeded battery built from
# the run's questions, judged with the judge rule's exact prompt, model and decoding.
rule judge_validation:
    input:
        questions=plan.questions.configured(),
        prompt=config["prompts"]["judge"],
        **JUDGE_MODEL.input,
    output:
        battery=plan.analysis.judge_validation_file("battery.parquet"),
        validation=plan.analysis.judge_validation_file("validation.parquet"),
        report=plan.analysis.judge_validation_file("validation.md"),
    log:
        f"logs/judge_validation/{config['judge']['model']}.log",
    params:
        **stage("lmad.stages.judge:judge_validation"),
        **JUDGE_MODEL.params,
        judge_name=JUDGE,
        max_tokens=config["judge"]["max_tokens"],
        seed=config["seed"],
        **config["judge"]["validation"],
    conda:
        "../envs/pipeline.yaml"
    threads: JUDGE_MODEL.threads
    resources:
        **JUDGE_MODEL.resources,
    shell:
        STAGE
