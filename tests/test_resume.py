"""Resume in one step after ``kill -9``: the whole process group of a scripted-backend run of
CoT, SC, LMAD and MAD is killed at seeded points (counted in model calls); the README's local
command (no profile named: the workflow's own profiles/default sets rerun-incomplete; stale
locks of the dead run cleared) then
completes, re-issues no call the store had finished, and writes the tables of an
uninterrupted run."""
import os
import random
import signal
import subprocess
import sys
import time

import polars as pl
import pytest
import yaml

from conftest import REPO, make_config, scripted_model, stored_calls

MODEL = "oracle"
MODEL_ID = "oracle@test-double|scripted"  # lmad.backends.backend_identity of the entry below


def command(workdir):
    """docs/running.md "Resume after a kill": the same command as the first run."""
    return [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"),
            "--directory", str(workdir), "--configfile", str(workdir / "config.yaml"), "--cores", "2"]


def env(workdir):
    return {**os.environ, "LMAD_ALLOW_TEST_DOUBLE": "1", "KEYLOG_PATH": str(workdir / "calls.log"),
            "KEYLOG_MODEL": MODEL_ID,
            "PYTHONPATH": os.pathsep.join([str(REPO / "tests"), str(REPO / "workflow"), os.environ.get("PYTHONPATH", "")])}


def setup(workdir):
    make_config(workdir, n=1, models={MODEL: {**scripted_model(), "responder": "keylog:respond"}}, backbones=[MODEL],
                methods=("cot", "sc", "lmad", "mad"), lmad={"iterations": 2, "local_rounds": 1}, debate={"rounds": 2})


def setup_small(workdir):
    """One dataset, CoT, SC and MAD: the SLURM resume test's run (tests/test_slurm.py)."""
    setup(workdir)
    config = yaml.safe_load((workdir / "config.yaml").read_text())
    config["datasets"] = {"hotpotqa": {**config["datasets"]["hotpotqa"], "n": 2}}
    config["methods"] = ["cot", "sc", "mad"]
    (workdir / "config.yaml").write_text(yaml.safe_dump(config))


def logged(workdir) -> list[str]:
    log = workdir / "calls.log"
    return [line for line in log.read_text().splitlines() if len(line) == 64] if log.exists() else []


def run(workdir):
    proc = subprocess.run(command(workdir), env=env(workdir), capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-6000:]
    return proc


def tables(workdir) -> dict[str, pl.DataFrame]:
    """Every result table; `cached` (served by the store or not) is the one column a resume changes."""
    out = {}
    for path in sorted((workdir / "results").rglob("*")):
        rel = str(path.relative_to(workdir))
        if path.suffix == ".parquet":
            out[rel] = pl.read_parquet(path).drop("cached", strict=False)
        elif path.suffix in (".csv", ".md") and "manifest" not in path.name:
            out[rel] = path.read_text()
    return out


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("uninterrupted")
    setup(workdir)
    run(workdir)
    return workdir, logged(workdir), tables(workdir)


@pytest.mark.parametrize("point", [0, 1, 2])
def test_kill_9_then_the_same_command_resumes_without_reissuing_a_finished_call(uninterrupted, tmp_path, point):
    base_dir, base_calls, base_tables = uninterrupted
    assert len(base_calls) == len(set(base_calls)) > 30
    # a seeded kill point (in calls) in each third of the run: early, middle, late
    kill_at = max(3, int(len(base_calls) * random.Random(1000 + point).uniform(point / 3, (point + 1) / 3)))
    kill_at = min(kill_at, len(base_calls) - 3)
    setup(tmp_path)
    proc = subprocess.Popen(command(tmp_path), env=env(tmp_path), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 600
    while len(logged(tmp_path)) < kill_at and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert proc.poll() is None, "the run ended before its kill point"
    os.killpg(proc.pid, signal.SIGKILL)  # the whole process group: snakemake and its jobs
    proc.wait()
    time.sleep(0.5)  # let the killed jobs' exits settle
    before_kill = logged(tmp_path)
    finished = {key for _, key in stored_calls(tmp_path / "cache")}
    assert list((tmp_path / ".snakemake" / "locks").glob("*.lock")), "the kill left no lock to clear"

    resumed = run(tmp_path)  # the README command, unchanged
    assert "stale Snakemake locks" in resumed.stderr
    after = logged(tmp_path)[len(before_kill):]
    reissued = finished & set(after)
    in_flight = set(before_kill) - finished  # answered by the model but not yet stored when killed
    print(f"kill point {point}: after {len(before_kill)} of {len(base_calls)} calls; {len(finished)} stored; "
          f"resume issued {len(after)}; finished calls re-issued {len(reissued)}; in flight at the kill {len(in_flight)}")
    assert not reissued
    assert set(after) | finished == set(base_calls)
    assert len(after) == len(set(after))
    got = tables(tmp_path)
    assert got.keys() == base_tables.keys()
    for name, table in base_tables.items():
        if isinstance(table, pl.DataFrame):
            assert got[name].equals(table), name
        else:
            assert got[name] == table, name
