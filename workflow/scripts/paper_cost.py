from lmad.smk import run_rule
from lmad.stages.paper import cost_table

run_rule(snakemake, cost_table)  # noqa: F821 (snakemake is injected by the script directive)
