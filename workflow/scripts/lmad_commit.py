from lmad.smk import run_rule
from lmad.stages.lmad import commit

run_rule(snakemake, commit)  # noqa: F821 (snakemake is injected by the script directive)
