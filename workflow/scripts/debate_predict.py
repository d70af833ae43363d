from lmad.smk import run_rule
from lmad.stages.debate import debate_predict

run_rule(snakemake, debate_predict)  # noqa: F821 (snakemake is injected by the script directive)
