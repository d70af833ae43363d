# Swap-checked pairwise jury of the layered-disagreement paper (docs/studies.md "Pairwise jury"), selected by config `jury.pair`:
# per backbone and juror model one job judges every question's pair of final answers and the
# sensitivity battery, each in both orders, in one batch; the table takes the jury's majority.
# Input functions live in rules/common.smk.


localrules:
    jury_table,


rule jury:
    input:
        questions=plan.configured_questions(),
        predictions=plan.jury_predictions,
        prompt=config["prompts"]["jury"],
        weights=lambda w: plan.model_files(w.juror),
    output:
        verdicts=layout.disagreement("{backbone}", "jury_{juror}.parquet"),
    log:
        "logs/{backbone}/jury/{juror}.log",
    wildcard_constraints:
        juror="|".join(re.escape(j) for j in JURORS),
    params:
        model=lambda w: plan.model_spec(w.juror),
        judge_name=lambda w: w.juror,
        cache_dir=config["cache_dir"],
        pair=config["jury"]["pair"],
        battery_questions=config["jury"]["battery_questions"],
        max_tokens=config["jury"]["max_tokens"],
        seed=config["seed"],
    conda:
        "../envs/pipeline.yaml"
    threads: lambda w: plan.model_threads(w.juror)
    resources:
        **plan.model_resources(wildcard="juror", models=JURORS),
    script:
        "../workflow/scripts/jury.py"


rule jury_table:
    input:
        verdicts=plan.jury_verdict_tables(),
    output:
        csv=layout.paper("jury.csv"),
        md=layout.paper("jury.md"),
    log:
        "logs/paper/jury.log",
    params:
        pair=config["jury"]["pair"],
        min_rate=config["jury"]["min_rate"],
        code=code_hash("lmad.stages.jury.jury_table", "lmad.jury.summarize"),
    conda:
        "../envs/pipeline.yaml"
    script:
        "../workflow/scripts/jury_table.py"
