"""lmad.heap: the pipeline's own processes freeze what their imports left and collect less often;
only Snakemake's command line, never a program that calls its API, is settled by the Snakefile."""
import subprocess
import sys

import pytest

from conftest import REPO
from lmad.heap import THRESHOLD, snakemake_command


@pytest.mark.parametrize("argv, command", [
    (["/venv/bin/snakemake", "--cores", "2"], True),  # the console script
    (["/venv/lib/python3.11/site-packages/snakemake/__main__.py", "-n"], True),  # python -m snakemake
    (["/home/me/notebooks/ipykernel_launcher.py", "-f", "k.json"], False),  # the API in a notebook
    (["/home/me/snakemake/__init__.py"], False),
    (["/home/me/other/__main__.py"], False),
    (["-c"], False),
    ([""], False),
    ([], False),
])
def test_only_snakemakes_command_line_counts_as_a_process_that_ends_with_its_run(argv, command):
    assert snakemake_command(argv) is command


def test_settle_freezes_what_is_alive_and_raises_the_first_threshold():
    # in a process of its own: freezing this test process would keep its garbage for good
    code = ("import gc, lmad.heap as h; before = gc.get_freeze_count(); h.settle(); "
            "print(before, gc.get_freeze_count() > 0, list(gc.get_threshold()))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={"PYTHONPATH": str(REPO / "workflow")}).stdout.split(maxsplit=1)
    assert out[0] == "0" and out[1].strip() == f"True {list(THRESHOLD)}"
