from lmad.smk import run_rule
from lmad.stages.lmad import debate

run_rule(snakemake, debate)  # noqa: F821 (snakemake is injected by the script directive)
