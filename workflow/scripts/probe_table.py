from lmad.smk import run_rule
from lmad.stages.probe import probe_table

# vLLM starts its workers with spawn, which re-imports this file: run only as the script
if __name__ == "__main__":
    run_rule(snakemake, probe_table)  # noqa: F821 (snakemake is injected by the script directive)
