from lmad.smk import run_rule
from lmad.stages.paper import viewer

run_rule(snakemake, viewer)  # noqa: F821 (snakemake is injected by the script directive)
