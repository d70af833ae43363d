"""A job's side of the warm worker (lmad.worker): hand a job to it over its Unix socket and
wait for the exit status. Standard library only: every rule's command (workflow/scripts/stage.py,
lmad.stage_command.run_line) imports this and little more before the worker takes its job, and a
job's imports are paid 50 times in a row by the LMAD chain at 10 iterations (docs/benchmarks.md)."""
from __future__ import annotations

import os
import pickle
import socket
import struct
import sys
ENV = "LMAD_WORKER_SOCKET"       # set in Snakemake's environment, inherited by every local job
MODEL_ENV = "LMAD_MODEL_WORKER_SOCKET"  # the model worker's, where the run has one
SWITCH = "LMAD_WORKER"           # "0" turns the worker off
HEADER = struct.Struct("!Q")
STATUS = struct.Struct("!i")
REFUSED = -(1 << 30)   # the child is not of the job's interpreter or code, or loads no such model: it runs elsewhere


def identity() -> tuple[str, str, str]:
    """The interpreter and code a process runs: a job under ``--use-conda``, in a container or
    with another checkout on its path is not the worker's to run."""
    import lmad

    return sys.executable, sys.prefix, os.path.realpath(lmad.__file__)


def recv_exact(conn: socket.socket, size: int) -> bytes:
    chunks, got = [], 0
    while got < size:
        chunk = conn.recv(min(size - got, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def hand_over(rule: str, logs: list[str], line: str) -> int | None:
    """Run rule ``rule``'s job line (lmad.stage_command; its log files ``logs``) in a child of the
    warm worker, or of the model worker where the warm one refuses it (a job that loads a model),
    which builds the job (lmad.worker.job_of); its exit status, or None when no worker takes it
    (then the caller runs it itself)."""
    paths = [path for path in (os.environ.get(ENV), os.environ.get(MODEL_ENV)) if path]
    if not paths or os.environ.get(SWITCH) == "0":
        return None
    try:
        # the job is pickled inside: a child of other code refuses it before unpickling it
        inner = pickle.dumps(((rule, logs, line), os.getcwd(), dict(os.environ)), protocol=pickle.HIGHEST_PROTOCOL)
        payload = pickle.dumps((identity(), inner), protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:  # an unpicklable param: the job runs here
        return None
    for path in paths:
        status = _hand_to(path, payload, rule)
        if status is not None:
            return status
    return None


def _hand_to(path: str, payload: bytes, rule: str) -> int | None:
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(path)
        socket.send_fds(conn, [HEADER.pack(len(payload))], [sys.stdout.fileno(), sys.stderr.fileno()])
        conn.sendall(payload)
    except OSError:  # not up yet, or gone: nothing reached a child
        conn.close()
        return None
    with conn:  # from here the child owns the job: its status is the job's
        status = recv_exact(conn, STATUS.size)
    if status == STATUS.pack(REFUSED):
        return None
    if len(status) < STATUS.size:
        print(f"lmad worker: the process running rule {rule} ended without a status "
              "(killed?); see the job's log", file=sys.stderr)
        return 1
    return STATUS.unpack(status)[0]
