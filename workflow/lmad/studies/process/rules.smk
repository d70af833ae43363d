# Process metrics of the TrueMAD paper (docs/studies.md "Process metrics"), selected by config `process.rubric`:
# the judge model scores every debate reply on RP / EI / NC (one job per backbone, one batch),
# and the table adds CPL / AME / CMP1v(K-1) of every debating method, LMAD included. Input
# functions are lmad.studies.process.plan's.

PROCESS = plan.study("process")


localrules:
    process_table,


rule process_scores:
    input:
        unpack(plan.lmad.local_debate_inputs),
        questions=plan.questions.tables,
        rounds=plan.debate.replies,
        prompt=config["prompts"]["process_rubric"],
        **JUDGE_MODEL.input,
    output:
        scores=layout.disagreement("{backbone}", "process_scores.parquet"),
    log:
        "logs/{backbone}/process/scores.log",
    params:
        **stage("lmad.studies.process.stages:process_scores"),
        **JUDGE_MODEL.params,
        judge_name=JUDGE,
        max_tokens=config["process"]["max_tokens"],
    conda:
        "../../../../envs/pipeline.yaml"
    threads: JUDGE_MODEL.threads
    resources:
        **JUDGE_MODEL.resources,
    shell:
        STAGE


# The rubric judge's known-answer battery (lmad.studies.process.metrics.build_rubric_battery): the table shows the
# rubric means only when it passes (one job, the run's judge model, one batch).
rule rubric_validation:
    input:
        questions=plan.questions.configured(),
        prompt=config["prompts"]["process_rubric"],
        **JUDGE_MODEL.input,
    output:
        battery=PROCESS.rubric_validation_file("battery.parquet"),
        validation=PROCESS.rubric_validation_file("validation.parquet"),
        report=PROCESS.rubric_validation_file("validation.md"),
    log:
        f"logs/judge_validation/{config['judge']['model']}.rubric.log",
    params:
        **stage("lmad.studies.process.stages:rubric_validation"),
        **JUDGE_MODEL.params,
        judge_name=JUDGE,
        max_tokens=config["process"]["max_tokens"],
        questions_per_dataset=config["process"]["battery_questions"],
        min_recall=config["process"]["min_recall"],
        seed=config["seed"],
    conda:
        "../../../../envs/pipeline.yaml"
    threads: JUDGE_MODEL.threads
    resources:
        **JUDGE_MODEL.resources,
    shell:
        STAGE


rule process_table:
    input:
        unpack(PROCESS.table_inputs),
        questions=plan.questions.configured(),
        validation=plan.analysis.judge_validation_file(),
    output:
        csv=layout.paper("process.csv"),
        md=layout.paper("process.md"),
    log:
        "logs/paper/process.log",
    params:
        **stage("lmad.studies.process.stages:process_table"),
    conda:
        "../../../../envs/pipeline.yaml"
    shell:
        STAGE
