from lmad.smk import run_rule
from lmad.stages.judge import judge_validation

run_rule(snakemake, judge_validation)  # noqa: F821 (snakemake is injected by the script directive)
