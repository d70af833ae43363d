from lmad.smk import run_rule
from lmad.stages.paper import headroom_table

run_rule(snakemake, headroom_table)  # noqa: F821 (snakemake is injected by the script directive)
