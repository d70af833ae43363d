from lmad.smk import run_rule

# vLLM starts its workers with spawn, which re-imports this file: run only as the script
if __name__ == "__main__":
    run_rule(snakemake, "lmad.stages.localized_debate:predict_methods")  # noqa: F821 (snakemake is injected by the script directive)
