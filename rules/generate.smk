# Independent solver samples: stage `cot` (one agent, temperature 0) and stage `proposals`
# (the persona temperatures; the shared round 0 of SC, the MAD family and LMAD). One job
# per backbone and stage (and shard) covers every dataset in one batch; `predict` votes
# per method, every dataset in one job.


rule generate:
    priority: LMAD_CHAIN_PRIORITY  # the proposals are LMAD's iteration 0
    input:
        questions=plan.question_tables,
        prompt=config["prompts"]["solver"],
        weights=lambda w: plan.model_files(w.backbone),
    output:
        samples=plan.sample_tables(),
    log:
        plan.job_log("generate", "{stage}"),
    benchmark:
        plan.job_log("generate", "{stage}", "logs/benchmarks", "tsv")
    params:
        **plan.model_params(),
        stage=lambda w: w.stage,
        temperatures=lambda w: plan.stage_temperatures(w.stage, plan.agent_temperatures(w.backbone)),
        max_tokens=config["solver"]["max_tokens"],
        seed=plan.call_seed,
    conda:
        "../envs/pipeline.yaml"
    threads: lambda w: plan.model_threads(w.backbone)
    resources:
        **plan.model_resources(),
    script:
        "../workflow/scripts/generate.py"


rule predict:
    input:
        questions=plan.question_tables,
        samples=plan.vote_samples,
    output:
        predictions=plan.prediction_outputs(),
    log:
        plan.prediction_log(),
    params:
        method=lambda w: w.method,
        units=plan.prediction_units(),
        code=code_hash("lmad.stages.predict.predict_datasets"),
    conda:
        "../envs/pipeline.yaml"
    script:
        "../workflow/scripts/predict.py"
