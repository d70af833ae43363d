# Independent solver samples: stage `cot` (one agent, temperature 0) and stage `proposals`
# (the persona temperatures; the shared round 0 of SC, the MAD family and LMAD). One job
# per backbone and stage (and shard) covers every dataset in one batch; `predict` votes
# per method, every dataset in one job.


rule generate:
    priority: LMAD_CHAIN_PRIORITY  # the proposals are LMAD's iteration 0
    input:
        questions=question_tables,
        prompt=config["prompts"]["solver"],
        weights=lambda w: model_files(w.backbone),
    output:
        samples=sample_tables(),
    log:
        job_log("generate", "{stage}"),
    benchmark:
        job_log("generate", "{stage}", "benchmarks", "tsv")
    params:
        **model_params(),
        stage=lambda w: w.stage,
        temperatures=lambda w: stage_temperatures(w.stage),
        max_tokens=config["solver"]["max_tokens"],
        seed=call_seed,
    conda:
        "../envs/pipeline.yaml"
    threads: lambda w: model_threads(w.backbone)
    resources:
        **model_resources(),
    script:
        "../workflow/scripts/generate.py"


rule predict:
    input:
        questions=question_tables,
        samples=vote_samples,
    output:
        predictions=prediction_outputs(),
    log:
        prediction_log(),
    params:
        method=lambda w: w.method,
        units=prediction_units(),
    conda:
        "../envs/pipeline.yaml"
    script:
        "../workflow/scripts/predict.py"
