# Debate baselines and plug-ins (MAD, Consensus, promptMAD, TrueMAD, ComputeMAD,
# Self-AdviceMAD, DMAD, TrueDMAD, dMAD): one job per backbone, method and round (and
# shard) covering every dataset in one batch per step, writing each dataset's round
# answers (samples), other calls (debate_steps) and per-question state (debate_state)
# under results/{backbone}/{dataset}/{debate_method}/. Round 0 of the MAD
# family is the shared self-consistency proposals (zero calls). The protocols are data in
# lmad.protocols.debate.methods; input functions are lmad.plan's.


rule debate_round:
    input:
        unpack(plan.debate.round_inputs),
        questions=plan.questions.tables,
        **BACKBONE_MODEL.input,
    output:
        samples=plan.debate.round_patterns(""),
        steps=plan.debate.round_patterns("_steps"),
        state=plan.debate.round_patterns("_state"),
    log:
        plan.job_log("{debate_method}", "round{debate_round}"),
    benchmark:
        plan.job_log("{debate_method}", "round{debate_round}", "logs/benchmarks", "tsv")
    params:
        **stage("lmad.stages.debate:debate_round"),
        **BACKBONE_MODEL.params,
        method=lambda w: w.debate_method,
        round_index=lambda w: int(w.debate_round),
        last=lambda w: int(w.debate_round) == plan.debate.setting(w.debate_method).rounds,
        temperatures=lambda w: list(plan.debate.setting(w.debate_method, w.backbone).temperatures),
        manners=lambda w: list(plan.debate.setting(w.debate_method, w.backbone).manners),
        max_tokens=config["solver"]["max_tokens"],
        aux_max_tokens=lambda w: plan.debate.aux_max_tokens(w.debate_method),
        seed=plan.call_seed,
        **plan.debate.persistence_params(),
    conda:
        "../envs/pipeline.yaml"
    threads: BACKBONE_MODEL.threads
    resources:
        **BACKBONE_MODEL.resources,
    shell:
        STAGE


if DEBATE_METHODS:

    localrules:
        debate_predict,

    rule debate_predict:
        input:
            questions=plan.questions.tables,
            samples=plan.debate.every_round_by_method(""),
            steps=plan.debate.every_round_by_method("_steps"),
            final_state=plan.debate.final_state,
        output:
            predictions=plan.questions.prediction_outputs(DEBATE_METHODS),
        log:
            plan.questions.prediction_log("debate-methods"),
        params:
            **stage("lmad.stages.debate:debate_predict_methods"),
            methods=DEBATE_METHODS,
            rounds=[plan.debate.setting(m).rounds for m in DEBATE_METHODS],
            units=plan.questions.prediction_units(DEBATE_METHODS),
        conda:
            "../envs/pipeline.yaml"
        shell:
            STAGE
