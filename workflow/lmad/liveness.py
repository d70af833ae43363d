"""Whether a recorded process still runs: a run's lock owner (lmad.runlock), a served model's
server (lmad.backends.serve)."""
from __future__ import annotations

import os
from pathlib import Path


def _stat(pid: int) -> list[str] | None:
    """The fields of ``/proc/<pid>/stat`` after the command name (Linux; None where unreadable):
    ``[0]`` the state, ``[19]`` the start time."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()  # the command name (field 2) may hold spaces and parentheses


def start_time(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (Linux), None where unknown."""
    fields = _stat(pid)
    return fields[19] if fields else None


def alive(pid: int, started: str | None = None) -> bool:
    """Whether process ``pid`` still runs: it exists (owned by anyone), it is not a zombie (a
    zombie child of this process is reaped here) and, when ``started`` (:func:`start_time`) is
    given, it is the process that started then, not another one that got the pid since."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        pass
    try:
        if os.waitpid(pid, os.WNOHANG)[0]:
            return False
    except ChildProcessError:  # not this process's child
        pass
    fields = _stat(pid)
    if fields and fields[0] == "Z":
        return False
    return started is None or fields is None or fields[19] == started
