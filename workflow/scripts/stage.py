"""Every rule's command (lmad.stage_command.STAGE_COMMAND): runs the stage function the rule's
params name (``**stage("module:function")``, lmad.smk.stage), given the rule's name and log files
as arguments and the job's inputs, outputs, params and wildcards as one line on stdin. The
library is this checkout's: rules/common.smk puts its workflow/ first on PYTHONPATH, which this
job's process inherits; the tables' key columns come from their paths (lmad.schemas.write_table),
so nothing here sets either."""
import sys

from lmad.smk import run_rule
from lmad.stage_command import decode_job

# vLLM starts its workers with spawn, which re-imports this file: run only as the script
if __name__ == "__main__":
    run_rule(decode_job(sys.argv[1], sys.argv[2:], sys.stdin.readline()))
