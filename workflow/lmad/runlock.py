"""Stale Snakemake locks after a kill: cleared on the next run, never while their run lives.

Snakemake locks a working directory by writing ``.snakemake/locks/<n>.{input,output}.lock``
and deletes them when it exits. ``kill -9`` (or a node failure) skips that, and every later
run fails with ``LockException`` until someone runs ``snakemake --unlock``. Snakemake's
lock files record no owner, so this module keeps one: the main process of every run of
this workflow writes ``.snakemake/lmad-owners/<host>-<pid>`` (with the process start time,
so a recycled pid is not mistaken for the owner) while the Snakefile is parsed — before
Snakemake takes its locks — and removes it when it exits. On the next run, lock files
whose every owner record names a process on this host that no longer runs are stale and
are removed; a live owner, an owner on another host, or locks with no owner record at all
(a run of another tool) are left alone, and Snakemake's own ``LockException`` stands
(docs/running.md "Resume after a kill": ``snakemake --unlock``).
"""
from __future__ import annotations

import atexit
import json
import logging
import os
import re
import socket
import sys
from pathlib import Path

from .liveness import alive, start_time

log = logging.getLogger(__name__)

_LOCK_FILE = re.compile(r"^\d+\.(input|output)\.lock$")


def clear_stale_locks(snakemake_dir: str | os.PathLike = ".snakemake", register: bool = True) -> list[str]:
    """Remove lock files left by a dead run of this workflow; record this process as an
    owner (when ``register``). Returns the removed lock files' names."""
    root = Path(snakemake_dir)
    owners = root / "lmad-owners"
    host = socket.gethostname()
    live, dead, foreign = [], [], []
    for record in sorted(owners.glob("*")) if owners.is_dir() else []:
        try:
            data = json.loads(record.read_text())
            pid, rec_host, started = int(data["pid"]), str(data["host"]), data.get("started")
        except (OSError, ValueError, KeyError, TypeError):
            dead.append(record)  # a record cut by a kill while being written
            continue
        if rec_host != host:
            foreign.append(record)
        elif pid == os.getpid():
            continue
        elif alive(pid, started):
            live.append(record)
        else:
            dead.append(record)
    removed = []
    locks = root / "locks"
    lock_files = [p for p in locks.iterdir() if _LOCK_FILE.match(p.name)] if locks.is_dir() else []
    if lock_files and dead and not live and not foreign:
        for p in lock_files:
            p.unlink(missing_ok=True)
            removed.append(p.name)
        pids = ", ".join(r.name for r in dead)
        print(f"lmad: removed stale Snakemake locks {removed} of a killed run ({pids})", file=sys.stderr)
    for record in dead:
        record.unlink(missing_ok=True)
    if register:
        owners.mkdir(parents=True, exist_ok=True)
        mine = owners / f"{host}-{os.getpid()}"
        tmp = owners / f".{mine.name}.tmp"
        tmp.write_text(json.dumps({"pid": os.getpid(), "host": host, "started": start_time(os.getpid())}))
        os.replace(tmp, mine)
        atexit.register(lambda: mine.unlink(missing_ok=True))
    return removed


def guard_workflow(workflow) -> None:
    """Called from the Snakefile: only the main process of a run owns its locks (job
    subprocesses and SLURM jobs re-parse the Snakefile but never lock)."""
    if workflow.remote_exec or workflow.subprocess_exec:
        return
    clear_stale_locks(Path(os.getcwd()) / ".snakemake")
