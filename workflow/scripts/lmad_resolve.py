from lmad.smk import run_rule
from lmad.stages.lmad import resolve

run_rule(snakemake, resolve)  # noqa: F821 (snakemake is injected by the script directive)
