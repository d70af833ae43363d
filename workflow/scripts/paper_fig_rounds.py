from lmad.smk import run_rule
from lmad.stages.paper import fig_rounds

run_rule(snakemake, fig_rounds)  # noqa: F821 (snakemake is injected by the script directive)
