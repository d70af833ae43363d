from lmad.smk import run_rule
from lmad.stages.paper import table1

run_rule(snakemake, table1)  # noqa: F821 (snakemake is injected by the script directive)
