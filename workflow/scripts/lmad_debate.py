from lmad.smk import run_rule
from lmad.stages.lmad import local_debate

run_rule(snakemake, local_debate)  # noqa: F821 (snakemake is injected by the script directive)
