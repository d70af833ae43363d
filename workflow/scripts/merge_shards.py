from lmad.smk import run_rule
from lmad.stages.shards import merge_shards

run_rule(snakemake, merge_shards)  # noqa: F821 (snakemake is injected by the script directive)
