# Debate baselines and plug-ins (MAD, Consensus, promptMAD, TrueMAD, ComputeMAD,
# Self-AdviceMAD, DMAD, TrueDMAD, dMAD): one job per backbone, method and round (and
# shard) covering every dataset in one batch per step, writing each dataset's round
# answers (samples), other calls (debate_steps) and per-question state (debate_state)
# under results/{backbone}/{dataset}/{debate_method}/. Round 0 of the MAD
# family is the shared self-consistency proposals (zero calls). The protocols are data in
# lmad.protocols.debate.methods; input functions are lmad.plan's.


rule debate_round:
    input:
        unpack(plan.debate_round_inputs),
        questions=plan.question_tables,
        **BACKBONE_MODEL.input,
    output:
        samples=plan.debate_round_patterns(""),
        steps=plan.debate_round_patterns("_steps"),
        state=plan.debate_round_patterns("_state"),
    log:
        plan.job_log("{debate_method}", "round{debate_round}"),
    benchmark:
        plan.job_log("{debate_method}", "round{debate_round}", "logs/benchmarks", "tsv")
    params:
        **stage("lmad.stages.debate:debate_round"),
        **BACKBONE_MODEL.params,
        method=lambda w: w.debate_method,
        round_index=lambda w: int(w.debate_round),
        last=lambda w: int(w.debate_round) == plan.debate_setting(w.debate_method).rounds,
        temperatures=lambda w: list(plan.debate_setting(w.debate_method, w.backbone).temperatures),
        manners=lambda w: list(plan.debate_setting(w.debate_method, w.backbone).manners),
        max_tokens=config["solver"]["max_tokens"],
        aux_max_tokens=lambda w: plan.aux_max_tokens(w.debate_method),
        seed=plan.call_seed,
        **plan.persistence_params(),
    conda:
        "../envs/pipeline.yaml"
    threads: BACKBONE_MODEL.threads
    resources:
        **BACKBONE_MODEL.resources,
    script:
        "../workflow/scripts/stage.py"


if DEBATE_METHODS:

    localrules:
        debate_predict,

    rule debate_predict:
        input:
            questions=plan.question_tables,
            samples=plan.debate_every_round_by_method(""),
            steps=plan.debate_every_round_by_method("_steps"),
            final_state=plan.debate_final_state,
        output:
            predictions=plan.prediction_outputs(DEBATE_METHODS),
        log:
            plan.prediction_log("debate-methods"),
        params:
            **stage("lmad.stages.debate:debate_predict_methods"),
            methods=DEBATE_METHODS,
            rounds=[plan.debate_setting(m).rounds for m in DEBATE_METHODS],
            units=plan.prediction_units(DEBATE_METHODS),
        conda:
            "../envs/pipeline.yaml"
        script:
            "../workflow/scripts/stage.py"
