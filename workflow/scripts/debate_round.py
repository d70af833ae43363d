from lmad.smk import run_rule
from lmad.stages.debate import debate_round

run_rule(snakemake, debate_round)  # noqa: F821 (snakemake is injected by the script directive)
