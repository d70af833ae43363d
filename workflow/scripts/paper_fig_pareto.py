from lmad.smk import run_rule
from lmad.stages.paper import fig_pareto

run_rule(snakemake, fig_pareto)  # noqa: F821 (snakemake is injected by the script directive)
