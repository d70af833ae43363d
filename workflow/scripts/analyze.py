from lmad.smk import run_rule
from lmad.stages.analyze import analyze

run_rule(snakemake, analyze)  # noqa: F821 (snakemake is injected by the script directive)
