"""The warm worker (lmad.worker): a job it takes runs in a forked child with the script's
streams, environment and working directory and a settled heap (lmad.heap), fails the way the
script would, dies with its script, and a job it cannot take runs in the script's own process;
a workflow gives the same tables with and without it."""
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest

from conftest import REPO, make_config, snakemake
from lmad import heap, worker
from lmad.backend_registry import in_process_backends
from lmad.liveness import alive

TESTS = Path(__file__).parent
CLIENT = r"""
import sys
from lmad.stage_command import JobSpec, run_line
out, log, mode, stage = sys.argv[1:5]
# the stage named by the rule's params, as workflow/scripts/stage.py runs every rule (lmad.smk.stage)
line = format(JobSpec({"input": {}, "output": {"out": out}, "wildcards": {},
                       "params": {"function": stage, "code": "0", "mode": mode}}), "")
run_line("probe", [log], line)
"""


@pytest.fixture
def warm(monkeypatch):
    """A worker started by this test process (its parent), that finds tests/worker_stage.py."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(TESTS), str(REPO / "workflow")]))
    monkeypatch.delenv(worker.SWITCH, raising=False)
    path = worker.start()
    assert worker.wait_until_ready()
    yield path
    worker.stop()


def client(tmp_path, mode="ok", stage="worker_stage:probe", env=None, wait=True):
    args = [sys.executable, "-c", CLIENT, str(tmp_path / "out.json"), str(tmp_path / "job.log"), mode, stage]
    proc = subprocess.Popen(args, cwd=tmp_path, env={**os.environ, "PROBE": "from the job", **(env or {})},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if not wait:
        return proc
    out, err = proc.communicate(timeout=60)
    return proc.returncode, out, err


def test_a_job_runs_in_a_child_of_the_worker_with_the_scripts_streams_env_and_cwd(tmp_path, warm):
    rc, out, err = client(tmp_path)
    assert rc == 0, err
    seen = json.loads((tmp_path / "out.json").read_text())
    assert seen["ppid"] == worker._SERVER["proc"].pid  # forked from the worker, not the script
    assert (seen["cwd"], seen["env"], seen["rule"]) == (str(tmp_path), "from the job", "probe")
    assert seen["heap"] == [True, list(heap.THRESHOLD)]  # the imports frozen before the fork
    assert out == "to stdout\n" and err == "to stderr\n"
    assert "forked from the warm worker" in (tmp_path / "job.log").read_text()


@pytest.mark.parametrize("mode, status, says", [("raise", 1, "the stage failed on purpose"), ("exit", 3, "")])
def test_a_failing_stage_fails_its_job_with_its_status_and_traceback(tmp_path, warm, mode, status, says):
    rc, _, err = client(tmp_path, mode)
    assert rc == status and says in err and not (tmp_path / "out.json").exists()
    if mode == "raise":
        assert "rule probe failed" in (tmp_path / "job.log").read_text()


def test_a_killed_job_takes_its_child_with_it(tmp_path, warm):
    proc = client(tmp_path, "sleep", wait=False)
    deadline = time.monotonic() + 30
    children = []
    while not children:  # the child that runs the job
        assert time.monotonic() < deadline
        children = _children(worker._SERVER["proc"].pid)
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)  # what Snakemake's cancel amounts to for the script
    proc.communicate()
    while alive(children[0]):
        assert time.monotonic() < deadline, "the child outlived its script"
        time.sleep(0.05)
    assert not (tmp_path / "out.json").exists()


def test_without_a_worker_or_for_an_in_process_model_the_script_runs_the_stage(tmp_path, warm):
    for env in ({worker.ENV: ""}, {worker.SWITCH: "0"}, {worker.ENV: str(tmp_path / "no-such-socket")}):
        rc, _, err = client(tmp_path, env=env)
        assert rc == 0, err
        seen = json.loads((tmp_path / "out.json").read_text())
        assert seen["ppid"] != worker._SERVER["proc"].pid
        assert seen["heap"] == [True, list(heap.THRESHOLD)]  # settled as the worker's children are
        assert "forked" not in (tmp_path / "job.log").read_text()
    other = tmp_path / "other"  # another checkout of the code on the job's path: refused
    shutil.copytree(REPO / "workflow" / "lmad", other / "lmad", ignore=shutil.ignore_patterns("__pycache__"))
    rc, _, err = client(tmp_path, env={"PYTHONPATH": os.pathsep.join([str(other), str(TESTS)])})
    assert rc == 0, err
    assert json.loads((tmp_path / "out.json").read_text())["ppid"] != worker._SERVER["proc"].pid
    assert in_process_backends({"model": {"backend": "transformers"}}) == {"transformers"}
    assert in_process_backends({"jurors": [{"backend": "vllm"}]}) == {"vllm"}
    assert not in_process_backends({"model": {"backend": "vllm", "serve": True}})
    assert not in_process_backends({"model": {"backend": "scripted"}, "out": "x"})


def command(tmp_path, stage="worker_stage:probe", env=None, **params):
    """A rule's command (lmad.stage_command): workflow/scripts/stage.py with its job line on stdin."""
    from lmad.stage_command import JobSpec

    line = format(JobSpec({"input": {}, "output": {"out": str(tmp_path / "out.json")}, "wildcards": {},
                           "params": {"function": stage, "code": "0", **params}}), "")
    proc = subprocess.run([sys.executable, str(REPO / "workflow" / "scripts" / "stage.py"), "probe",
                           str(tmp_path / "job.log")], input=line + "\n", cwd=tmp_path, capture_output=True,
                          text=True, timeout=300, env={**os.environ, "PROBE": "from the job", **(env or {})})
    seen = json.loads((tmp_path / "out.json").read_text()) if proc.returncode == 0 else None
    return proc, seen


def test_a_rules_command_hands_its_line_to_the_worker_unless_the_job_loads_a_model(tmp_path, warm):
    proc, seen = command(tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert seen["ppid"] == worker._SERVER["proc"].pid and (seen["env"], seen["rule"]) == ("from the job", "probe")
    assert proc.stdout == "to stdout\n" and "forked from the warm worker" in (tmp_path / "job.log").read_text()
    # a model that loads into the job's process: the child refuses it, the script runs it itself
    proc, seen = command(tmp_path, model={"backend": "transformers", "name": "m"})
    assert proc.returncode == 0, proc.stderr
    assert seen["ppid"] != worker._SERVER["proc"].pid and "forked" not in (tmp_path / "job.log").read_text()
    proc, _ = command(tmp_path, mode="exit")
    assert proc.returncode == 3


@pytest.fixture
def warm_models(monkeypatch):
    """The warm worker and the model worker of the embedded engine (lmad.worker.start)."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(TESTS), str(REPO / "workflow")]))
    monkeypatch.delenv(worker.SWITCH, raising=False)
    worker.start(["transformers"])
    assert worker.wait_until_ready(180)  # it imports torch and transformers first
    yield worker._SERVER["proc"].pid, worker._MODEL_SERVER["proc"].pid
    worker.stop()
    assert worker.MODEL_ENV not in os.environ and worker._MODEL_SERVER == {}


def test_a_job_that_loads_the_embedded_engine_forks_from_the_model_worker(tmp_path, warm_models):
    light, models = warm_models
    for threads in ("1", "2"):  # as Snakemake sets it per job: the child starts with it, as a process would
        proc, seen = command(tmp_path, env={"OMP_NUM_THREADS": threads}, model={"backend": "transformers"})
        assert proc.returncode == 0, proc.stderr
        assert seen["ppid"] == models and seen["torch"] == int(threads) and seen["rule"] == "probe"
        assert seen["heap"] == [True, list(heap.THRESHOLD)]
        assert proc.stdout == "to stdout\n" and "forked from the model worker" in (tmp_path / "job.log").read_text()
    proc, seen = command(tmp_path)  # no model: the warm worker, which imported no torch
    assert proc.returncode == 0, proc.stderr
    assert seen["ppid"] == light and seen["torch"] is None
    # an in-process engine without warm imports (vLLM starts processes of its own): the script runs it
    proc, seen = command(tmp_path, model={"backend": "vllm"})
    assert proc.returncode == 0, proc.stderr
    assert seen["ppid"] not in (light, models) and seen["torch"] is None
    proc, _ = command(tmp_path, mode="raise", model={"backend": "transformers"})
    assert proc.returncode == 1 and "the stage failed on purpose" in proc.stderr


@pytest.mark.model
def test_the_embedded_engine_replies_alike_forked_from_the_model_worker_and_in_its_own_process(
        tmp_path, warm_models, smollm2_dir):
    model = {"backend": "transformers", "name": "smollm2-135m", "model": str(smollm2_dir)}
    prompts = ["Is the sky blue? Answer yes or no.", "Name one prime number."]
    seen = {}
    for name, env in (("forked", {}), ("own", {worker.SWITCH: "0"})):
        proc, seen[name] = command(tmp_path, stage="worker_stage:complete", env={"OMP_NUM_THREADS": "2", **env},
                                   model=model, prompts=prompts)
        assert proc.returncode == 0, proc.stderr
    assert seen["forked"]["ppid"] == warm_models[1] and seen["own"]["ppid"] not in warm_models
    assert seen["forked"]["threads"] == seen["own"]["threads"] == 2
    assert seen["forked"]["texts"] == seen["own"]["texts"] and len(seen["own"]["texts"]) == 6
    assert set(seen["own"]["texts"][2::3]) <= {"yes", "no"}  # the grammar's rows


def test_stop_ends_the_worker_and_a_worker_whose_snakemake_died_ends_itself(tmp_path, warm):
    proc, path = worker._SERVER["proc"], warm
    worker.stop()
    assert proc.poll() is not None and not Path(path).exists() and worker.ENV not in os.environ
    # a parent that exits without stopping it (a killed Snakemake)
    code = "import sys; from lmad import worker; print(worker._SERVER['proc'].pid if worker.start() else '')"
    pid = int(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)
    deadline = time.monotonic() + 10
    while alive(pid):
        assert time.monotonic() < deadline, "the worker outlived its Snakemake"
        time.sleep(0.1)


SWALLOWING_PRELOAD = r"""
import os, sys, time
from lmad import worker
def preload(*_):  # an import that catches what it should not, for 3 s
    end = time.monotonic() + 3
    while time.monotonic() < end:
        try:
            time.sleep(0.01)
        except {caught}:
            pass
worker.preload = preload
print("serving", flush=True)
worker.serve(sys.argv[1], os.getppid())
"""


@pytest.mark.parametrize("caught, within_s", [("Exception", 1.5), ("BaseException", 6.0)])
def test_a_stop_during_preload_is_not_swallowed_by_the_code_it_interrupts(tmp_path, caught, within_s):
    """stop() sends SIGTERM, which may land in an import's ``except Exception`` while a short run
    ends during preload: the server still ends at once (or, past an ``except BaseException``, at
    its first poll) instead of running on until stop() gives up after 30 s."""
    env = {**os.environ, "PYTHONPATH": str(REPO / "workflow")}
    proc = subprocess.Popen([sys.executable, "-c", SWALLOWING_PRELOAD.replace("{caught}", caught),
                             str(tmp_path / "socket")], env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "serving"
        time.sleep(0.3)
        start = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=within_s)
        assert time.monotonic() - start < within_s
    finally:
        proc.kill()
        proc.wait()


def test_a_workflow_gives_the_same_tables_with_and_without_the_worker(tmp_path):
    tables = {}
    for name, env in (("warm", {}), ("cold", {worker.SWITCH: "0"})):
        work = tmp_path / name
        work.mkdir()
        make_config(work, n=2, methods=["cot", "sc", "mad", "lmad"])
        snakemake(work, "--until", "judge", env=env)
        logs = "".join(p.read_text() for p in (work / "logs").rglob("*.log"))
        assert ("forked from the warm worker" in logs) == (name == "warm")
        tables[name] = {p.relative_to(work): pl.read_parquet(p) for p in (work / "results").rglob("*.parquet")}
    assert tables["warm"].keys() == tables["cold"].keys() and tables["warm"]
    for path, frame in tables["warm"].items():
        assert frame.equals(tables["cold"][path]), path


def _children(pid):
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid and fields[0] != "Z":
            found.append(int(stat.parent.name))
    return found
