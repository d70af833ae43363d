from lmad.smk import run_rule
from lmad.stages.judge import judge

run_rule(snakemake, judge)  # noqa: F821 (snakemake is injected by the script directive)
