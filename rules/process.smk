# Process metrics of seed 001 (README "Process metrics"), selected by config `process.rubric`:
# the judge model scores every debate reply on RP / EI / NC (one job per backbone, one batch),
# and the table adds CPL / AME / CMP1v(K-1) of every debating method, LMAD included. Input
# functions live in rules/common.smk.


localrules:
    process_table,


rule process_scores:
    input:
        unpack(pushback_lmad_inputs),
        questions=question_tables,
        rounds=debate_replies,
        prompt=config["prompts"]["process_rubric"],
        weights=model_files(config["judge"]["model"]),
    output:
        scores=layout.disagreement("{backbone}", "process_scores.parquet"),
    log:
        "logs/{backbone}/process/scores.log",
    params:
        **judge_params(),
        max_tokens=config["process"]["max_tokens"],
    conda:
        "../envs/pipeline.yaml"
    threads: model_threads(config["judge"]["model"])
    resources:
        **model_resources(config["judge"]["model"]),
    script:
        "../workflow/scripts/process_scores.py"


# The rubric judge's known-answer battery (lmad.process.build_rubric_battery): the table shows the
# rubric means only when it passes (one job, the run's judge model, one batch).
rule rubric_validation:
    input:
        questions=configured_questions(),
        prompt=config["prompts"]["process_rubric"],
        weights=model_files(config["judge"]["model"]),
    output:
        battery=rubric_validation_file("battery.parquet"),
        validation=rubric_validation_file("validation.parquet"),
        report=rubric_validation_file("validation.md"),
    log:
        f"logs/judge_validation/{config['judge']['model']}.rubric.log",
    params:
        **judge_params(),
        max_tokens=config["process"]["max_tokens"],
        questions_per_dataset=config["process"]["battery_questions"],
        min_recall=config["process"]["min_recall"],
        seed=config["seed"],
    conda:
        "../envs/pipeline.yaml"
    threads: model_threads(config["judge"]["model"])
    resources:
        **model_resources(config["judge"]["model"]),
    script:
        "../workflow/scripts/rubric_validation.py"


rule process_table:
    input:
        unpack(process_table_inputs),
        questions=configured_questions(),
        validation=judge_validation_file(),
    output:
        csv=layout.paper("process.csv"),
        md=layout.paper("process.md"),
    log:
        "logs/paper/process.log",
    params:
        code=code_hash("lmad.stages.process.process_table", "lmad.stages.process._transitions",
                       "lmad.process.rubric_summary", "lmad.paper.dynamics.dynamics",
                       "lmad.answer_types.gold_correct", "lmad.stages.units.read_golds"),
    conda:
        "../envs/pipeline.yaml"
    script:
        "../workflow/scripts/process_table.py"
