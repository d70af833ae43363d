"""A checkout runs its own library, whatever `pip install -e` put on the path (it points at this
repository): a copy's parse, jobs and code hashes read the copy's workflow/lmad. And a finished
run moved or copied elsewhere has nothing to redo: no param or input names it by absolute path.
Each copy is its own run directory, as the README's demo is, with a scripted-backend config."""
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import REPO

MARK = "stage-files.txt"  # a marked stage's job appends its module's file here
MARKED = {"prepare": "prepare_data", "analyze": "analyze"}  # lmad.stages module: function


def copy_checkout(dest: Path) -> Path:
    """The working tree's own files (tracked or untracked, not ignored) and a small config whose
    paths are relative to the copy."""
    listed = subprocess.run(["git", "-C", str(REPO), "ls-files", "-z", "-co", "--exclude-standard"],
                            capture_output=True, text=True, check=True).stdout
    for name in filter(None, listed.split("\0")):
        if (REPO / name).is_file():  # a tracked file deleted from the working tree stays out
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, dest / name)
    config = {
        "seed": 0,
        "cache_dir": "cache/calls",
        "datasets": {"hotpotqa": {"source": "jsonl", "path": "data/demo/hotpotqa.jsonl", "n": 1}},
        "models": {"scripted": {"backend": "scripted", "model": "scripted"}},
        "backbones": ["scripted"],
        "judge": {"model": "scripted", "max_tokens": 4},
        "methods": ["cot"],
        "agents": {"temperatures": [0.1, 0.5, 0.9]},
        "solver": {"max_tokens": 64},
        "prompts": {p.stem: f"config/prompts/{p.name}" for p in (dest / "config" / "prompts").glob("*.txt")},
        "analysis": {"bootstrap_resamples": 200},
    }
    (dest / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    return dest


def snakemake(checkout: Path, *args: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "snakemake", "--snakefile", str(checkout / "Snakefile"), "--directory", str(checkout),
           "--configfile", str(checkout / "config.yaml"), "--cores", "2", *args]
    return subprocess.run(cmd, env={**os.environ, "LMAD_ALLOW_TEST_DOUBLE": "1"}, capture_output=True, text=True,
                          timeout=600)


def planned(proc: subprocess.CompletedProcess) -> set[str]:
    """The rules a dry run lists."""
    assert proc.returncode == 0, proc.stderr[-6000:]
    return set(re.findall(r"^(?:local)?rule (\w+):", proc.stdout + proc.stderr, re.M))


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """A copy whose marked stages record the file they run from, after a complete run; and a
    copy of that whole directory (results, cache, .snakemake metadata) elsewhere."""
    run = copy_checkout(tmp_path_factory.mktemp("first") / "lmad")
    for module, function in MARKED.items():
        with (run / "workflow" / "lmad" / "stages" / f"{module}.py").open("a") as f:
            f.write(f"\n\n_unmarked = {function}\n\n\ndef {function}(*args, **kwargs):\n"
                    f"    with open({MARK!r}, 'a') as out:\n        out.write(__file__ + '\\n')\n"
                    f"    return _unmarked(*args, **kwargs)\n")
    proc = snakemake(run)
    assert proc.returncode == 0, proc.stderr[-6000:]
    copied = tmp_path_factory.mktemp("elsewhere") / "deeper" / "copied"
    shutil.copytree(run, copied, symlinks=True)
    return run, copied


def test_each_copy_parses_with_its_own_library(tmp_path):
    good = copy_checkout(tmp_path / "good")
    broken = copy_checkout(tmp_path / "broken")
    with (broken / "workflow" / "lmad" / "layout.py").open("a") as f:
        f.write("\nraise ImportError('this checkout is broken')\n")
    failed = snakemake(broken, "-n")
    assert failed.returncode != 0 and "this checkout is broken" in failed.stdout + failed.stderr, failed.stdout[-3000:]
    assert "prepare_data" in planned(snakemake(good, "-n"))


def test_jobs_and_code_hashes_read_the_copy(finished):
    run, _ = finished
    ran = [Path(f).resolve() for f in (run / MARK).read_text().split()] if (run / MARK).exists() else []
    # every marked job, in its own process or forked from the warm worker, ran the copy's stage
    assert sorted(ran) == sorted((run / "workflow" / "lmad" / "stages" / f"{m}.py").resolve() for m in MARKED)
    assert planned(snakemake(run, "-n")) == set()
    with (run / "workflow" / "lmad" / "stages" / "analyze.py").open("a") as f:
        f.write("\n# an edit in this copy only\n")
    again = planned(snakemake(run, "-n"))
    assert "analyze" in again and "prepare_data" not in again


def test_a_moved_run_has_nothing_to_do(finished):
    _, copied = finished
    proc = snakemake(copied, "-n")
    assert planned(proc) == set()
    assert "Nothing to be done" in proc.stdout + proc.stderr
