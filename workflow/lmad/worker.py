"""The warm worker: a local run's stage jobs fork from one process that has imported polars
and every stage module already.

Why: most of a short job's CPU is its interpreter importing polars and the stage (~0.2 s
of ~0.4 s), and LMAD's chain of short jobs waits for that five times per iteration.
Snakemake still starts every job's script (workflow/scripts/stage.py), so logs, metadata,
benchmarks and reruns are what they were; the script hands its job here instead of importing
the stage.
A forked child takes over the script's stdout, stderr, environment and working directory,
runs the stage and sends back its exit status.

* Started by the Snakefile's ``onstart`` handler for local execution only (a SLURM job runs
  its stage itself), stopped by ``onsuccess``/``onerror``; it also exits when the Snakemake
  process that started it is gone. ``warm_worker: false`` in the config or ``LMAD_WORKER=0``
  in the environment turns it off.
* A job that cannot use it (no worker yet or any more, another interpreter or checkout)
  runs in its own process as before: the worker changes speed, never results.
* A job that loads a model into its process goes to a second one, the model worker, started
  where a job to run loads a model whose backend lists ``warm_imports`` (the registry; the
  embedded transformers engine): it has imported torch and transformers too, ~4 s of each such
  job's start. It only imports, so no runtime thread pool exists before the fork, and its child
  takes the job's thread count as a new process would (``_threads_as_started``). Other
  in-process engines (vLLM, which starts processes and GPUs of its own) run in their own process.
* A child whose script process dies (Snakemake cancelled the job) kills itself at once, so
  no stage writes an output after Snakemake has cleaned the job's outputs up.
* The server only imports, never computes: polars' thread pool starts in each child, not
  before the fork.
"""
from __future__ import annotations

import importlib
import os
import pickle
import pkgutil
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path
from typing import Any, Sequence

from . import heap
from .backend_registry import BACKENDS, in_process_backends
from .worker_client import ENV, HEADER, MODEL_ENV, REFUSED, STATUS, SWITCH, identity, recv_exact

_POLL_S = 0.5


# ---- the job's side -----------------------------------------------------------------------

def job_of(request: tuple[str, list[str], str], backends: frozenset[str] = frozenset()) -> Any:
    """The job a child was handed as (rule, log files, job line) (lmad.stage_command.run_line),
    built as its script would (lmad.smk.build_job); None for a job that loads a model into its
    own process other than through ``backends`` (what this worker preloaded), which the script
    then hands to the model worker or runs itself."""
    from .smk import build_job
    from .stage_command import decode_job

    job = build_job(decode_job(*request))
    return None if in_process_backends(job.kwargs) - backends else job


def _threads_as_started() -> None:
    """In a model worker's child: the thread count a new process of the job's environment would
    start with. OpenMP read OMP_NUM_THREADS when the worker imported torch, from the worker's
    environment; Snakemake sets it per job to the job's threads."""
    value = os.environ.get("OMP_NUM_THREADS", "")
    if value.isdigit() and int(value) > 0 and "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(int(value))


# ---- the server ---------------------------------------------------------------------------

def preload(backends: frozenset[str] = frozenset()) -> None:
    """Import polars, every stage module, the studies' too (none imports pyarrow, plotting or a model runtime at
    import: tests/test_job_imports.py) and pyplot on Agg, which the figure stages import; and the
    ``warm_imports`` of ``backends`` (the model worker's)."""
    import polars  # noqa: F401

    import lmad.stages
    from lmad.studies import stage_modules

    for name in [f"lmad.stages.{info.name}" for info in pkgutil.iter_modules(lmad.stages.__path__)] + stage_modules():
        importlib.import_module(name)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot  # noqa: F401

    for name in sorted(backends):
        for module in BACKENDS[name].warm_imports:
            importlib.import_module(module)


class _Stop(BaseException):
    """SIGTERM: stop() asks the server to end now, not at its next poll. A BaseException, as
    KeyboardInterrupt is: a SIGTERM that lands in an import's ``except Exception`` (preload
    runs while a short run may already be ending) must not be swallowed, or stop() waits out
    its timeout."""


_stopping = False


def _stop(*_: Any) -> None:
    global _stopping
    _stopping = True  # seen at the next poll if a library swallows even a BaseException
    raise _Stop


def serve(path: str, parent: int, backends: frozenset[str] = frozenset()) -> None:
    signal.signal(signal.SIGTERM, _stop)
    children: set[int] = set()
    listener = None
    try:
        preload(backends)
        heap.settle()  # the children never scan what the imports left (lmad.heap)
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(path)  # jobs that find no socket yet run in their own process
        listener.listen(64)
        while os.getppid() == parent and not _stopping:
            _reap(children, block=False)
            ready, _, _ = select.select([listener], [], [], _POLL_S)
            if not ready:
                continue
            conn, _ = listener.accept()
            pid = os.fork()
            if pid == 0:
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
                listener.close()
                _child(conn, backends)  # never returns
            conn.close()
            children.add(pid)
    except _Stop:
        pass
    finally:
        if listener is not None:
            listener.close()
            Path(path).unlink(missing_ok=True)
        # children of a finished run are exiting; a cancelled run's kill themselves. Waiting
        # for them adds their CPU to this process's, which its parent collects.
        _reap(children, block=True)


def _reap(children: set[int], block: bool) -> None:
    for pid in list(children):
        done, _ = os.waitpid(pid, 0 if block else os.WNOHANG)
        if done:
            children.discard(pid)


def _child(conn: socket.socket, backends: frozenset[str]) -> None:
    status = 1
    finished = threading.Event()
    try:
        header, fds, _, _ = socket.recv_fds(conn, HEADER.size, 2)
        sender, inner = pickle.loads(recv_exact(conn, HEADER.unpack(header)[0]))
        if sender != identity():
            status = REFUSED
            return  # (the finally sends it)
        request, cwd, env = pickle.loads(inner)
        for target, fd in zip((1, 2), fds):
            os.dup2(fd, target)
            os.close(fd)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.close(devnull)
        os.chdir(cwd)
        os.environ.clear()
        os.environ.update(env)
        job = job_of(request, backends)  # in the job's directory and environment: it reads its prompt files
        if job is None:
            status = REFUSED
            return
        if backends:
            _threads_as_started()
        threading.Thread(target=_die_with_client, args=(conn, finished), daemon=True).start()
        from lmad.job import execute

        execute(job, forked="the model worker" if backends else "the warm worker")
        status = 0
    except SystemExit as exit:
        if isinstance(exit.code, str):  # as the interpreter would, had the script exited so
            print(exit.code, file=sys.stderr)
        status = 0 if exit.code is None else exit.code if isinstance(exit.code, int) else 1
    except BaseException:
        traceback.print_exc()
    finally:
        try:
            import atexit

            atexit._run_exitfuncs()
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            finished.set()
            try:
                conn.sendall(STATUS.pack(status))
            except OSError:
                pass
            os._exit(status)


def _die_with_client(conn: socket.socket, finished: threading.Event) -> None:
    """The script process closed its end (Snakemake killed the job): stop before any output
    is written after Snakemake's cleanup."""
    try:
        conn.recv(1)
    except OSError:
        pass
    if not finished.is_set():
        os.kill(os.getpid(), signal.SIGKILL)


# ---- Snakemake's side (the Snakefile's onstart / onsuccess / onerror) ----------------------

_SERVER: dict[str, Any] = {}        # the warm worker: proc, path, dir
_MODEL_SERVER: dict[str, Any] = {}  # the model worker: proc, path


def start(model_backends: Sequence[str] = ()) -> str | None:
    """Start the worker for this Snakemake process, and the model worker where
    ``model_backends`` (lmad.backend_registry.warm_backends of the jobs to run) names any;
    the worker's socket path (each socket's path also put in the environment the jobs inherit),
    or None when switched off. Linux only unless ``LMAD_WORKER=1``: forking after imports is
    untested elsewhere (macOS, where Python's own multiprocessing stopped forking by default)."""
    switch = os.environ.get(SWITCH)
    if switch == "0" or (sys.platform != "linux" and switch != "1"):
        return None
    stop()
    where = tempfile.mkdtemp(prefix="lmad-worker-")  # private (0700)
    path = os.path.join(where, "socket")
    if len(os.fsencode(path)) >= 100:  # AF_UNIX paths stop at 104-108 bytes: a long TMPDIR
        os.rmdir(where)
        return None
    _SERVER.update(proc=_launch(path), path=path, dir=where)
    os.environ[ENV] = path
    if model_backends:
        model_path = os.path.join(where, "models")
        _MODEL_SERVER.update(proc=_launch(model_path, model_backends), path=model_path)
        os.environ[MODEL_ENV] = model_path
    return path


def _launch(path: str, backends: Sequence[str] = ()) -> subprocess.Popen:
    import lmad  # the server runs this process's checkout of the code, whatever its path

    code_root = os.path.dirname(os.path.dirname(os.path.realpath(lmad.__file__)))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [code_root, os.environ.get("PYTHONPATH")]))}
    return subprocess.Popen([sys.executable, "-m", "lmad.worker", path, str(os.getpid()), *backends],
                            stdin=subprocess.DEVNULL, env=env, start_new_session=True)


def stop(timeout_s: float = 30.0) -> None:
    """Stop the workers and wait for them (their jobs' CPU is counted in this process's children)."""
    os.environ.pop(ENV, None)
    os.environ.pop(MODEL_ENV, None)
    for server in (_MODEL_SERVER, _SERVER):
        proc = server.pop("proc", None)
        if proc is None:
            continue
        proc.terminate()
        try:
            proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        Path(server.pop("path")).unlink(missing_ok=True)
    if "dir" in _SERVER:
        try:
            os.rmdir(_SERVER.pop("dir"))
        except OSError:
            pass


def wait_until_ready(timeout_s: float = 30.0) -> bool:
    """Whether the started workers accept jobs within ``timeout_s`` (for tests: jobs
    themselves never wait, they run in their own process until it is up)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        paths = [os.environ.get(ENV)] + ([os.environ[MODEL_ENV]] if MODEL_ENV in os.environ else [])
        if all(path and os.path.exists(path) for path in paths):
            return True
        time.sleep(0.05)
    return False


if __name__ == "__main__":
    serve(sys.argv[1], int(sys.argv[2]), frozenset(sys.argv[3:]))
