from lmad.smk import run_rule
from lmad.stages.lmad import generate

run_rule(snakemake, generate)  # noqa: F821 (snakemake is injected by the script directive)
