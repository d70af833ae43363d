from lmad.smk import run_rule

if __name__ == "__main__":
    run_rule(snakemake, "lmad.stages.analyze:replicates")  # noqa: F821 (snakemake is injected by the script directive)
