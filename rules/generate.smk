# Independent solver samples: stage `cot` (one agent, temperature 0) and stage `proposals`
# (the persona temperatures; the shared round 0 of SC, the MAD family and LMAD). One job
# per backbone and stage (and shard) covers every dataset in one batch; `predict` votes
# per method, every dataset in one job.


rule generate:
    priority: LMAD_CHAIN_PRIORITY  # the proposals are LMAD's iteration 0
    input:
        questions=plan.questions.tables,
        prompt=config["prompts"]["solver"],
        **BACKBONE_MODEL.input,
    output:
        samples=plan.questions.sample_tables(),
    log:
        plan.job_log("generate", "{stage}"),
    benchmark:
        plan.job_log("generate", "{stage}", "logs/benchmarks", "tsv")
    params:
        **stage("lmad.stages.generate:generate"),
        **BACKBONE_MODEL.params,
        stage=lambda w: w.stage,
        temperatures=lambda w: plan.questions.stage_temperatures(w.stage, plan.models.agent_temperatures(w.backbone)),
        max_tokens=config["solver"]["max_tokens"],
        seed=plan.call_seed,
    conda:
        "../envs/pipeline.yaml"
    threads: BACKBONE_MODEL.threads
    resources:
        **BACKBONE_MODEL.resources,
    shell:
        STAGE


rule predict:
    input:
        questions=plan.questions.tables,
        samples=plan.questions.vote_samples,
    output:
        predictions=plan.questions.prediction_outputs(),
    log:
        plan.questions.prediction_log(),
    params:
        **stage("lmad.stages.predict:predict_datasets"),
        method=lambda w: w.method,
        units=plan.questions.prediction_units(),
    conda:
        "../envs/pipeline.yaml"
    shell:
        STAGE
