# Run-level rules. Light rules run on the submitting host, never as cluster jobs (docs/running.md
# "Run on SLURM"); analyze and plot_accuracy are declared local in rules/analysis.smk, the
# LMAD bookkeeping rules in rules/lmad.smk (they exist only when an LMAD method is configured).
# Rule manifest records what produced the current results: config hash, package version,
# git commit and model loads per model, summed from the stage logs' `model_loaded=` lines.
# It runs after every backbone's analysis; a config change reruns it (params).


localrules:
    all,
    prepare_data,
    backbone_questions,
    predict,
    manifest,


rule manifest:
    input:
        tables=[layout.analysis(b, "table.md") for b in BACKBONES],
    output:
        manifest=layout.MANIFEST,
    log:
        "logs/manifest.log",
    params:
        **stage("lmad.stages.manifest:manifest"),
        config=config,
        repo=run_path(workflow.basedir),
    conda:
        "../envs/pipeline.yaml"
    shell:
        STAGE
