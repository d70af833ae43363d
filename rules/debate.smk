# Debate baselines and plug-ins (MAD, Consensus, promptMAD, TrueMAD, ComputeMAD,
# Self-AdviceMAD, DMAD, TrueDMAD, dMAD): one job per backbone, method and round (and
# shard) covering every dataset in one batch per step, writing each dataset's round
# answers (samples), other calls (debate_steps) and per-question state (debate_state)
# under results/{backbone}/{dataset}/{debate_method}/. Round 0 of the MAD
# family is the shared self-consistency proposals (zero calls). The protocols are data in
# lmad.protocols.debate.methods; input functions live in rules/common.smk.


rule debate_round:
    input:
        unpack(debate_round_inputs),
        questions=question_tables,
        weights=lambda w: model_files(w.backbone),
    output:
        samples=debate_round_outputs(""),
        steps=debate_round_outputs("_steps"),
        state=debate_round_outputs("_state"),
    log:
        job_log("{debate_method}", "round{debate_round}"),
    benchmark:
        job_log("{debate_method}", "round{debate_round}", "benchmarks", "tsv")
    params:
        **model_params(),
        method=lambda w: w.debate_method,
        round_index=lambda w: int(w.debate_round),
        last=lambda w: int(w.debate_round) == debate_setting(w.debate_method).rounds,
        temperatures=lambda w: list(debate_setting(w.debate_method).temperatures),
        manners=lambda w: list(debate_setting(w.debate_method).manners),
        max_tokens=config["solver"]["max_tokens"],
        aux_max_tokens=config["debate"]["max_tokens"],
        seed=call_seed,
        **persistence_params(),
    conda:
        "../envs/pipeline.yaml"
    threads: lambda w: model_threads(w.backbone)
    resources:
        **model_resources(),
    script:
        "../workflow/scripts/debate_round.py"


if DEBATE_METHODS:

    localrules:
        debate_predict,

    rule debate_predict:
        input:
            questions=question_tables,
            samples=debate_round_tables(""),
            steps=debate_round_tables("_steps"),
            final_state=debate_final_state,
        output:
            predictions=prediction_outputs(DEBATE_METHODS),
        log:
            prediction_log("debate-methods"),
        params:
            methods=DEBATE_METHODS,
            rounds=[debate_setting(m).rounds for m in DEBATE_METHODS],
            units=prediction_units(DEBATE_METHODS),
        conda:
            "../envs/pipeline.yaml"
        script:
            "../workflow/scripts/debate_predict.py"
