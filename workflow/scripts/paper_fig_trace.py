from lmad.smk import run_rule
from lmad.stages.paper import fig_trace

run_rule(snakemake, fig_trace)  # noqa: F821 (snakemake is injected by the script directive)
