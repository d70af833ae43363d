# Finalizers and round-level controls (When Debate Helps; docs/methods.md "Finalizers and round-level
# controls"): every finalizer of config `finalizers.names` (vote, vote_judge, lvd) applied to
# every saved round of every method — a debate method's round{t}, an LMAD method's
# iter{k}/generate, SC's shared proposals — one job per backbone covering every dataset, every
# judge / verifier call in one batch (lmad.studies.finalizers.stages). Off unless finalizers.enabled.

FINALIZERS = plan.study("finalizers")

if FINALIZERS.config["enabled"]:
    if SHARDS > 1:
        raise ValueError("finalizers.enabled needs shards: 1 (rule finalizers reads every round of a whole dataset)")

    rule finalizers:
        input:
            questions=plan.questions.tables,
            rounds=FINALIZERS.rounds,
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
            **stage("lmad.studies.finalizers.stages:finalizers"),
            **BACKBONE_MODEL.params,
            round_units=FINALIZERS.round_units(),
            datasets=DATASETS,
            names=FINALIZERS.config["names"],
            max_tokens=FINALIZERS.config["max_tokens"],
            lvd_weight=FINALIZERS.config["lvd_weight"],
            min_quote_words=FINALIZERS.config["min_quote_words"],
        conda:
            "../../../../envs/pipeline.yaml"
        threads: BACKBONE_MODEL.threads
        resources:
            **BACKBONE_MODEL.resources,
        shell:
            STAGE
# Readout tables and figures of the finalizers (docs/methods.md "Finalizers and round-level controls"):
# Parquet in, results/paper/readout.* and headroom_lift.* out (under results/paper/wdh/ with config
# paper.wdh: lmad.plan.paper.PaperPlan.wdh_born), no model calls. Off unless
# finalizers.enabled (input functions: lmad.studies.finalizers.plan).


if FINALIZERS.config["enabled"]:

    localrules:
        paper_readout,
        paper_headroom_lift,

    rule paper_readout:
        input:
            questions=plan.questions.configured(),
            finalized=FINALIZERS.finalized_tables(),
            held_out=plan.societies.held_out_splits(),
            predictions=lambda w: [layout.predictions(b, d, m) for b in BACKBONES for d in DATASETS
                                   for m in plan.rounds.finalizer_methods()],
            round_samples=lambda w: [layout.debate_round(b, d, m, t) for b in BACKBONES for d in DATASETS
                                     for m in DEBATE_METHODS for t in range(plan.rounds.saved(m))],
            round_steps=lambda w: [layout.debate_round(b, d, m, t, "_steps") for b in BACKBONES for d in DATASETS
                                   for m in DEBATE_METHODS for t in range(plan.rounds.saved(m))],
            traces=lambda w: [layout.lmad_trace(b, d, m) for b in BACKBONES for d in DATASETS for m in LMAD_METHODS],
            votes=lambda w: [layout.samples(b, d, METHODS[m].samples) for b in BACKBONES for d in DATASETS
                             for m in plan.rounds.finalizer_methods() if METHODS[m].family == "single"],
        output:
            csv=plan.paper.wdh_born("readout.csv"),
            md=plan.paper.wdh_born("readout.md"),
            png=plan.paper.wdh_born("readout.png"),
        log:
            "logs/paper/readout.log",
        params:
            **stage("lmad.studies.finalizers.readout_stages:readout_table"),
            held_out_size=plan.societies.held_out_size(),
            backbones=BACKBONES,
            methods=plan.rounds.finalizer_methods(),
        conda:
            "../../../../envs/pipeline.yaml"
        shell:
            STAGE

    rule paper_headroom_lift:
        input:
            questions=plan.questions.configured(),
            finalized=FINALIZERS.finalized_tables(),
            held_out=plan.societies.held_out_splits(),
            predictions=lambda w: [layout.predictions(b, d, m) for b in BACKBONES for d in DATASETS
                                   for m in plan.rounds.finalizer_methods()],
        output:
            csv=plan.paper.wdh_born("headroom_lift.csv"),
            md=plan.paper.wdh_born("headroom_lift.md"),
            png=plan.paper.wdh_born("headroom_lift.png"),
        log:
            "logs/paper/headroom_lift.log",
        params:
            **stage("lmad.studies.finalizers.readout_stages:headroom_lift"),
            held_out_size=plan.societies.held_out_size(),
        conda:
            "../../../../envs/pipeline.yaml"
        shell:
            STAGE
