from lmad.smk import run_rule
from lmad.stages.analyze import plot_accuracy

run_rule(snakemake, plot_accuracy)  # noqa: F821 (snakemake is injected by the script directive)
