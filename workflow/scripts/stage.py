"""Every rule's script: runs the stage function the rule's params name (``**stage("module:function")``,
lmad.smk.stage). The library is this checkout's: rules/common.smk puts its workflow/ first on
PYTHONPATH, which this job's process inherits; the tables' key columns come from their paths
(lmad.schemas.write_table), so nothing here sets either."""
from lmad.smk import run_rule

# vLLM starts its workers with spawn, which re-imports this file: run only as the script
if __name__ == "__main__":
    run_rule(snakemake)  # noqa: F821 (snakemake is injected by the script directive)
