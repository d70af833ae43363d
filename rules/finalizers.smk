# Finalizers and round-level controls (When Debate Helps; docs/methods.md "Finalizers and round-level
# controls"): every finalizer of config `finalizers.names` (vote, vote_judge, lvd) applied to
# every saved round of every method — a debate method's round{t}, an LMAD method's
# iter{k}/generate, SC's shared proposals — one job per backbone covering every dataset, every
# judge / verifier call in one batch (lmad.stages.finalizers). Off unless finalizers.enabled.


if FINALIZE["enabled"]:
    if SHARDS > 1:
        raise ValueError("finalizers.enabled needs shards: 1 (rule finalizers reads every round of a whole dataset)")

    rule finalizers:
        input:
            questions=plan.question_tables,
            rounds=plan.finalizer_rounds,
            prompt_judge=config["prompts"]["finalize_judge"],
            prompt_verifier=config["prompts"]["verifier"],
            **BACKBONE_MODEL.input,
        output:
            finalized=[layout.finalized("{backbone}", d) for d in DATASETS],
        log:
            "logs/{backbone}/finalizers.log",
        benchmark:
            "logs/benchmarks/{backbone}/finalizers.tsv"
        params:
            **stage("lmad.stages.finalizers:finalizers"),
            **BACKBONE_MODEL.params,
            round_units=plan.finalizer_round_units(),
            datasets=DATASETS,
            names=FINALIZE["names"],
            max_tokens=FINALIZE["max_tokens"],
            lvd_weight=FINALIZE["lvd_weight"],
            min_quote_words=FINALIZE["min_quote_words"],
        conda:
            "../envs/pipeline.yaml"
        threads: BACKBONE_MODEL.threads
        resources:
            **BACKBONE_MODEL.resources,
        script:
            "../workflow/scripts/stage.py"
