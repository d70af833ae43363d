# Readout tables and figures of the finalizers (docs/methods.md "Finalizers and round-level controls"):
# Parquet in, results/paper/readout.* and headroom_lift.* out, no model calls. Off unless
# finalizers.enabled (input functions: lmad.plan).


if FINALIZE["enabled"]:

    localrules:
        paper_readout,
        paper_headroom_lift,

    rule paper_readout:
        input:
            questions=plan.configured_questions(),
            finalized=plan.finalized_tables(),
            held_out=plan.held_out_splits(),
            predictions=lambda w: [layout.predictions(b, d, m) for b in BACKBONES for d in DATASETS
                                   for m in plan.finalizer_methods()],
            round_samples=lambda w: [layout.debate_round(b, d, m, t) for b in BACKBONES for d in DATASETS
                                     for m in DEBATE_METHODS for t in range(plan.method_rounds(m))],
            round_steps=lambda w: [layout.debate_round(b, d, m, t, "_steps") for b in BACKBONES for d in DATASETS
                                   for m in DEBATE_METHODS for t in range(plan.method_rounds(m))],
            traces=lambda w: [layout.lmad_trace(b, d, m) for b in BACKBONES for d in DATASETS for m in LMAD_METHODS],
            votes=lambda w: [layout.samples(b, d, METHODS[m].samples) for b in BACKBONES for d in DATASETS
                             for m in plan.finalizer_methods() if METHODS[m].family == "single"],
        output:
            csv=layout.paper("readout.csv"),
            md=layout.paper("readout.md"),
            png=layout.paper("readout.png"),
        log:
            "logs/paper/readout.log",
        params:
            **stage("lmad.stages.readout:readout_table"),
            held_out_size=plan.held_out_size(),
            backbones=BACKBONES,
            methods=plan.finalizer_methods(),
        conda:
            "../envs/pipeline.yaml"
        script:
            "../workflow/scripts/stage.py"

    rule paper_headroom_lift:
        input:
            questions=plan.configured_questions(),
            finalized=plan.finalized_tables(),
            held_out=plan.held_out_splits(),
            predictions=lambda w: [layout.predictions(b, d, m) for b in BACKBONES for d in DATASETS
                                   for m in plan.finalizer_methods()],
        output:
            csv=layout.paper("headroom_lift.csv"),
            md=layout.paper("headroom_lift.md"),
            png=layout.paper("headroom_lift.png"),
        log:
            "logs/paper/headroom_lift.log",
        params:
            **stage("lmad.stages.readout:headroom_lift"),
            held_out_size=plan.held_out_size(),
        conda:
            "../envs/pipeline.yaml"
        script:
            "../workflow/scripts/stage.py"
