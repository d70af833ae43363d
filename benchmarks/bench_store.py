"""The call store's cost per call (write, lookup) and file count, against the previous
one-JSON-file-per-call store, at 200,000 calls (docs/backends.md "Call cache").

    python benchmarks/bench_store.py [--calls 200000] [--dir <scratch folder>]

Writes happen as in a stage: one store per job (``--jobs`` writers, each its own segment for
the new store). Lookups are a fresh reader (a new job) asking for every call, index build
included; the index build alone (a job's fixed cost) is printed too, from the closed segments'
sidecars and, as if no writer had left one, by parsing every line. Replies are ~600
characters, like a solver's.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "workflow"))

from lmad.backends.base import ChatRequest, Completion  # noqa: E402
from lmad.backends.cache import CallStore  # noqa: E402


class OneFilePerCall:
    """The store before the sharded index (cache.py at 13e7744): ``<key[:2]>/<key>.json``, temp file + rename."""

    def __init__(self, root: Path):
        self.root = root

    def _path(self, key):
        return self.root / key[:2] / f"{key}.json"

    def put(self, key, c: Completion):
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        blob = json.dumps({"text": c.text, "prompt_tokens": c.prompt_tokens,
                           "completion_tokens": c.completion_tokens, "finish_reason": c.finish_reason},
                          ensure_ascii=False)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        with os.fdopen(fd, "w") as fh:
            fh.write(blob)
        os.replace(tmp, path)

    def get(self, key):
        try:
            data = json.loads(self._path(key).read_text())
        except FileNotFoundError:
            return None
        return Completion(**data, cached=True)


def files_and_bytes(root: Path) -> tuple[int, int, int]:
    """Files, their bytes, and the blocks they occupy (a small file takes a whole block)."""
    n = size = disk = 0
    for dirpath, _, names in os.walk(root):
        for name in names:
            st = os.stat(os.path.join(dirpath, name))
            n += 1
            size += st.st_size
            disk += st.st_blocks * 512
    return n, size, disk


def bench(name, make, root: Path, keys, reply, jobs):
    per_job = (len(keys) + jobs - 1) // jobs
    t0 = time.perf_counter()
    for j in range(jobs):
        store = make(root)
        for key in keys[j * per_job:(j + 1) * per_job]:
            store.put(key, reply)
        if hasattr(store, "close"):
            store.close()
    write = time.perf_counter() - t0
    t0 = time.perf_counter()
    reader = make(root)
    if hasattr(reader, "refresh"):
        reader.refresh()
    opened = time.perf_counter() - t0
    found = sum(reader.get(k) is not None for k in keys)
    lookup = time.perf_counter() - t0
    assert found == len(keys), (name, found)
    n, size, disk = files_and_bytes(root)
    print(f"{name:<18} write {write / len(keys) * 1e6:7.1f} µs/call   lookup {lookup / len(keys) * 1e6:7.1f} µs/call"
          f"   files {n:>8,}   {size / 2**20:7.1f} MiB ({disk / 2**20:7.1f} MiB on disk)"
          f"   a job's index build {opened:5.2f} s")
    return write, lookup, n


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=200_000)
    parser.add_argument("--jobs", type=int, default=40, help="writers (stage jobs)")
    parser.add_argument("--dir", default=None)
    args = parser.parse_args()
    base = Path(args.dir or tempfile.mkdtemp(prefix="bench-store-"))
    keys = [ChatRequest(messages=(("user", f"question {i}"),), seed=i).key("bench@test") for i in range(args.calls)]
    reply = Completion(text=("The passages say so. " * 28) + "\nAnswer: Zanzibar", prompt_tokens=900,
                       completion_tokens=150, finish_reason="stop")
    print(f"{args.calls:,} calls, {args.jobs} writer jobs, under {base}")
    try:
        bench("one file per call", OneFilePerCall, base / "old", keys, reply, args.jobs)
        bench("segments (this)", CallStore, base / "new", keys, reply, args.jobs)
        for side in (base / "new").glob("*.idx"):  # as if every writer had been killed before its sidecar
            side.unlink()
        reader = CallStore(base / "new")
        t0 = time.perf_counter()
        reader.refresh()
        print(f"{'  no sidecars':<18} a job's index build {time.perf_counter() - t0:5.2f} s (every line parsed)")
    finally:
        if not args.dir:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
