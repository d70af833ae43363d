from lmad.smk import run_rule
from lmad.stages.lmad import predict

run_rule(snakemake, predict)  # noqa: F821 (snakemake is injected by the script directive)
