from lmad.smk import run_rule
from lmad.stages.prepare import backbone_questions

run_rule(snakemake, backbone_questions)  # noqa: F821 (snakemake is injected by the script directive)
