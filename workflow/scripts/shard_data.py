from lmad.smk import run_rule
from lmad.stages.shards import shard_data

run_rule(snakemake, shard_data)  # noqa: F821 (snakemake is injected by the script directive)
