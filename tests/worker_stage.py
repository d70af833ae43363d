"""A stage for tests/test_worker.py: the warm worker's child imports it by name."""
import gc
import json
import os
import sys
import time


def probe(out, provenance, mode="ok", model=None):
    print("to stdout")
    print("to stderr", file=sys.stderr)
    if mode == "raise":
        raise RuntimeError("the stage failed on purpose")
    if mode == "exit":
        raise SystemExit(3)
    if mode == "sleep":
        time.sleep(30)
    with open(out, "w") as f:
        json.dump({"pid": os.getpid(), "ppid": os.getppid(), "cwd": os.getcwd(), "env": os.environ.get("PROBE"),
                   "rule": provenance["rule"],
                   "heap": [gc.get_freeze_count() > 0, list(gc.get_threshold())]}, f)
