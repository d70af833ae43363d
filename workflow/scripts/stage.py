"""Every rule's command (lmad.stage_command.STAGE_COMMAND): runs the stage function the rule's
params name (``**stage("module:function")``, lmad.smk.stage), given the rule's name and log files
as arguments and the job's inputs, outputs, params and wildcards as one line on stdin, in a child
of the warm worker or here (lmad.stage_command.run_line). The library is this checkout's:
rules/common.smk puts its workflow/ first on PYTHONPATH, which this job's process inherits; the
tables' key columns come from their paths (lmad.schemas.write_table), so nothing here sets
either."""
import sys

from lmad.stage_command import run_line

# vLLM starts its workers with spawn, which re-imports this file: run only as the script
if __name__ == "__main__":
    run_line(sys.argv[1], sys.argv[2:], sys.stdin.readline())
