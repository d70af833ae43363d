from lmad.smk import run_rule
from lmad.stages.prepare import prepare_data

run_rule(snakemake, prepare_data)  # noqa: F821 (snakemake is injected by the script directive)
