from lmad.smk import run_rule
from lmad.stages.paper import table2

run_rule(snakemake, table2)  # noqa: F821 (snakemake is injected by the script directive)
