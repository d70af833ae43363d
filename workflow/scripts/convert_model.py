from lmad.smk import run_rule
from lmad.stages.prepare import convert_model

run_rule(snakemake, convert_model)  # noqa: F821 (snakemake is injected by the script directive)
