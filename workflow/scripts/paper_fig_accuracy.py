from lmad.smk import run_rule
from lmad.stages.paper import fig_accuracy

run_rule(snakemake, fig_accuracy)  # noqa: F821 (snakemake is injected by the script directive)
