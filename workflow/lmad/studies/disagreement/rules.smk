# Disagreement layers of the layered-disagreement paper (docs/studies.md "Disagreement layers"), selected by config
# `disagreement:`. Layer A (self-reports) is asked inside rule debate_round; here: layer B's
# validation on its authored battery (one job, the run's judge model), layer B's labels of
# every debate reply (one job per backbone, one batch), and the table. Input functions live
# in lmad.studies.disagreement.plan.

DISAGREEMENT = plan.study("disagreement")


localrules:
    disagreement_table,
    probe_table,


rule pushback_validation:
    input:
        questions=plan.questions.configured(),
        prompt=config["prompts"]["pushback_judge"],
        **JUDGE_MODEL.input,
    output:
        battery=DISAGREEMENT.pushback_validation_file("battery.parquet"),
        validation=DISAGREEMENT.pushback_validation_file("validation.parquet"),
        report=DISAGREEMENT.pushback_validation_file("validation.md"),
    log:
        f"logs/judge_validation/{config['judge']['model']}.pushback.log",
    params:
        **stage("lmad.studies.disagreement.stages:pushback_validation"),
        **JUDGE_MODEL.params,
        judge_name=JUDGE,
        max_tokens=config["disagreement"]["pushback_max_tokens"],
        questions_per_dataset=config["disagreement"]["battery_questions"],
        min_recall=config["disagreement"]["min_recall"],
        seed=config["seed"],
    conda:
        "../../../../envs/pipeline.yaml"
    threads: JUDGE_MODEL.threads
    resources:
        **JUDGE_MODEL.resources,
    shell:
        STAGE


rule pushback:
    input:
        unpack(plan.lmad.local_debate_inputs),
        rounds=plan.debate.replies,
        prompt=config["prompts"]["pushback_judge"],
        **JUDGE_MODEL.input,
    output:
        labels=layout.disagreement("{backbone}", "pushback.parquet"),
    log:
        "logs/{backbone}/disagreement/pushback.log",
    params:
        **stage("lmad.studies.disagreement.stages:pushback"),
        **JUDGE_MODEL.params,
        judge_name=JUDGE,
        max_tokens=config["disagreement"]["pushback_max_tokens"],
    conda:
        "../../../../envs/pipeline.yaml"
    threads: JUDGE_MODEL.threads
    resources:
        **JUDGE_MODEL.resources,
    shell:
        STAGE


rule disagreement_table:
    input:
        unpack(DISAGREEMENT.table_inputs),
    output:
        csv=layout.paper("disagreement.csv"),
        md=layout.paper("disagreement.md"),
        png=layout.paper("disagreement.png"),
    log:
        "logs/paper/disagreement.log",
    params:
        **stage("lmad.studies.disagreement.stages:disagreement_table"),
        self_report=config["disagreement"]["self_report"],
    conda:
        "../../../../envs/pipeline.yaml"
    shell:
        STAGE


# Layers A and C on LMAD's local debate: each turn rebuilt from its stage tables and followed by
# the debater's self-report, and a seeded share of a toned method's turns re-asked with the tone
# deleted / kept (one job per backbone, one batch, the backbone's model).
rule lmad_self_report:
    input:
        unpack(plan.lmad.society),
        **plan.lmad.tone_prompts(),
        questions=plan.questions.tables,
        localizations=plan.lmad.every_iteration_by_dataset("localize"),
        positions=plan.lmad.every_iteration_by_dataset("debate"),
        states=plan.lmad.every_iteration_by_dataset("state", last=1),
        prompt=config["prompts"]["debater"],
        prompt_self_report=config["prompts"]["self_report"],
        **BACKBONE_MODEL.input,
    output:
        reports=layout.disagreement("{backbone}", "lmad_self_report.parquet"),
    log:
        "logs/{backbone}/disagreement/lmad_self_report.log",
    params:
        **stage("lmad.studies.disagreement.stages:lmad_self_report"),
        **BACKBONE_MODEL.params,
        max_tokens=config["lmad"]["max_tokens"]["debater"],
        seed=plan.call_seed,
        **plan.debate.persistence_params(),
    conda:
        "../../../../envs/pipeline.yaml"
    threads: BACKBONE_MODEL.threads
    resources:
        **BACKBONE_MODEL.resources,
    shell:
        STAGE


# Layer D: each backbone's next-token stance on its own round-0 answers (the shared proposals),
# argument vs length-matched filler, one batch per backbone (lmad.studies.disagreement.probe_stages).
rule probe:
    input:
        questions=plan.questions.tables,
        proposals=plan.questions.proposal_tables,
        **BACKBONE_MODEL.input,
    output:
        reads=layout.disagreement("{backbone}", "probe.parquet"),
    log:
        "logs/{backbone}/disagreement/probe.log",
    params:
        **stage("lmad.studies.disagreement.probe_stages:probe"),
        **BACKBONE_MODEL.params,
        min_mass=config["disagreement"]["probe_min_mass"],
    conda:
        "../../../../envs/pipeline.yaml"
    threads: BACKBONE_MODEL.threads
    resources:
        **BACKBONE_MODEL.resources,
    shell:
        STAGE


rule probe_table:
    input:
        reads=DISAGREEMENT.probe_reads(),
    output:
        csv=layout.paper("probe.csv"),
        md=layout.paper("probe.md"),
        png=layout.paper("probe.png"),
    log:
        "logs/paper/probe.log",
    params:
        **stage("lmad.studies.disagreement.probe_stages:probe_table"),
        min_mass=config["disagreement"]["probe_min_mass"],
    conda:
        "../../../../envs/pipeline.yaml"
    shell:
        STAGE
