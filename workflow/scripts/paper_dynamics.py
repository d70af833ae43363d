from lmad.smk import run_rule
from lmad.stages.paper import dynamics_table

run_rule(snakemake, dynamics_table)  # noqa: F821 (snakemake is injected by the script directive)
