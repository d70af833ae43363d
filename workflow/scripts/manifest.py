from lmad.smk import run_rule
from lmad.stages.manifest import manifest

run_rule(snakemake, manifest)  # noqa: F821 (snakemake is injected by the script directive)
