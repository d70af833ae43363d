# Swap-checked pairwise jury of the layered-disagreement paper (docs/studies.md "Pairwise jury"), selected by config `jury.pair`:
# per backbone and juror model one job judges every question's pair of final answers and the
# severity battery, each in both orders, in one batch (four 1-5 sub-scores per answer, or
# 1 / 2 / tie: jury.subscores); the table takes the jury's majority.
# Input functions are lmad.studies.jury.plan's.

JURY = plan.study("jury")
JUROR_MODEL = plan.models.rule("juror", JURY.jurors)


localrules:
    jury_table,


rule jury:
    input:
        questions=plan.questions.configured(),
        predictions=JURY.predictions,
        syntheses=JURY.syntheses,
        prompt=config["prompts"]["jury_subscores" if config["jury"]["subscores"] else "jury"],
        **JUROR_MODEL.input,
    output:
        verdicts=layout.disagreement("{backbone}", "jury_{juror}.parquet"),
    log:
        "logs/{backbone}/jury/{juror}.log",
    wildcard_constraints:
        juror="|".join(re.escape(j) for j in JURY.jurors),
    params:
        **stage("lmad.studies.jury.stages:jury"),
        **JUROR_MODEL.params,
        judge_name=lambda w: w.juror,
        pair=config["jury"]["pair"],
        battery=config["jury"]["battery"],
        subscores=config["jury"]["subscores"],
        max_tokens=config["jury"]["max_tokens"],
        seed=config["seed"],
    conda:
        "../../../../envs/pipeline.yaml"
    threads: JUROR_MODEL.threads
    resources:
        **JUROR_MODEL.resources,
    shell:
        STAGE


rule jury_table:
    input:
        verdicts=JURY.verdict_tables(),
    output:
        csv=layout.paper("jury.csv"),
        md=layout.paper("jury.md"),
    log:
        "logs/paper/jury.log",
    params:
        **stage("lmad.studies.jury.stages:jury_table"),
        pair=config["jury"]["pair"],
        min_rate=config["jury"]["min_rate"],
        battery=config["jury"]["battery"],
        subscores=config["jury"]["subscores"],
    conda:
        "../../../../envs/pipeline.yaml"
    shell:
        STAGE
