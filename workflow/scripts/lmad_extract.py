from lmad.smk import run_rule
from lmad.stages.lmad import extract

run_rule(snakemake, extract)  # noqa: F821 (snakemake is injected by the script directive)
