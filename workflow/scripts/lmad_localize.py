from lmad.smk import run_rule
from lmad.stages.lmad import localize

run_rule(snakemake, localize)  # noqa: F821 (snakemake is injected by the script directive)
