"""Stale Snakemake locks: removed only when every owner record names a dead process here."""
import json
import os
import socket
import subprocess
import sys

import pytest

from lmad.runlock import clear_stale_locks


def dead_pid():
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def setup(tmp_path, owners):
    locks = tmp_path / "locks"
    locks.mkdir()
    (locks / "0.input.lock").write_text("a\n")
    (locks / "0.output.lock").write_text("b\n")
    (tmp_path / "lmad-owners").mkdir()
    for name, record in owners.items():
        (tmp_path / "lmad-owners" / name).write_text(record if isinstance(record, str) else json.dumps(record))
    return locks


HOST = socket.gethostname()


@pytest.mark.parametrize("owners,removed", [
    ({"dead": {"pid": "DEAD", "host": HOST}}, True),
    ({"cut by a kill": "{\"pid\": 1"}, True),
    ({"live": {"pid": "LIVE", "host": HOST}}, False),
    ({"dead": {"pid": "DEAD", "host": HOST}, "live": {"pid": "LIVE", "host": HOST}}, False),
    ({"other host": {"pid": "DEAD", "host": "elsewhere"}}, False),
    ({}, False),  # locks nobody of this workflow claimed: Snakemake's LockException stands
])
def test_only_a_dead_owners_locks_are_removed(tmp_path, owners, removed):
    pids = {"DEAD": dead_pid(), "LIVE": os.getppid()}
    owners = {k: ({**v, "pid": pids[v["pid"]]} if isinstance(v, dict) else v) for k, v in owners.items()}
    locks = setup(tmp_path, owners)
    names = clear_stale_locks(tmp_path, register=False)
    assert bool(names) == removed
    assert (not list(locks.glob("*.lock"))) == removed


def test_a_recycled_pid_is_not_the_owner(tmp_path):
    """A record whose pid now belongs to another process (other start time) is dead."""
    locks = setup(tmp_path, {"x": {"pid": os.getppid(), "host": HOST, "started": "1"}})
    assert clear_stale_locks(tmp_path, register=False) and not list(locks.glob("*.lock"))


def test_this_run_registers_itself(tmp_path):
    clear_stale_locks(tmp_path)
    record = json.loads((tmp_path / "lmad-owners" / f"{HOST}-{os.getpid()}").read_text())
    assert record["pid"] == os.getpid() and record["host"] == HOST
