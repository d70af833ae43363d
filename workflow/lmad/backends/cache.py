"""Persistent call cache in front of any backend.

One JSON file per call under ``<root>/<model>/<key[:2]>/<key>.json``, written to a
temporary file and renamed into place. That makes concurrent Snakemake jobs (and SLURM
jobs on a shared filesystem) safe without any lock: readers see a whole entry or none,
and two writers of the same key write the same content. Misses are sent to the inner
backend in chunks and each chunk is persisted as soon as it returns, so a killed stage
resumes without re-issuing finished calls.
"""
from __future__ import annotations

import json
import logging
import os
import re
import tempfile
from dataclasses import asdict
from pathlib import Path
from typing import Callable, Sequence

from .base import Backend, ChatRequest, Completion

log = logging.getLogger(__name__)


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name)


class CachedBackend(Backend):
    """``factory`` builds the real backend on the first cache miss, so a stage whose
    calls are all cached (or that has nothing to do) never loads a model."""

    def __init__(self, factory: Callable[[], Backend], model_id: str, root: str | os.PathLike,
                 chunk_size: int = 16):
        if chunk_size < 1:
            raise ValueError("cache chunk_size must be >= 1")
        self.factory = factory
        self._inner: Backend | None = None
        self.model_id = model_id
        self.root = Path(root) / _safe(model_id)
        self.chunk_size = chunk_size
        self.hits = 0
        self.misses = 0

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def _load(self, key: str) -> Completion | None:
        path = self._path(key)
        try:
            data = json.loads(path.read_text())
        except FileNotFoundError:
            return None
        except (json.JSONDecodeError, UnicodeDecodeError):
            log.warning("cache entry %s is unreadable; recomputing it", path)
            return None
        data["cached"] = True
        return Completion(**data)

    def _store(self, key: str, completion: Completion) -> None:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        entry = asdict(completion)
        entry.pop("cached")
        blob = json.dumps(entry, ensure_ascii=False)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        with os.fdopen(fd, "w") as fh:
            fh.write(blob)
        os.replace(tmp, path)

    def generate(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        keys = [r.key(self.model_id) for r in requests]
        out: list[Completion | None] = [self._load(k) for k in keys]
        # identical requests inside one batch are computed once
        todo: dict[str, int] = {}
        for i, (k, c) in enumerate(zip(keys, out)):
            if c is None and k not in todo:
                todo[k] = i
        self.hits += sum(c is not None for c in out)
        pending = list(todo.items())
        for start in range(0, len(pending), self.chunk_size):
            chunk = pending[start : start + self.chunk_size]
            results = self.inner.generate([requests[i] for _, i in chunk])
            for (key, i), completion in zip(chunk, results):
                if completion.finish_reason != "error":
                    self._store(key, completion)
                out[i] = completion
            self.misses += len(chunk)
        for i, k in enumerate(keys):
            if out[i] is None:  # duplicate of a request computed in this batch
                out[i] = out[todo[k]]
                self.hits += 1
        return out  # type: ignore[return-value]

    @property
    def inner(self) -> Backend:
        if self._inner is None:
            self._inner = self.factory()
            if self._inner.model_id != self.model_id:
                raise RuntimeError(f"backend reports model id {self._inner.model_id!r}, "
                                   f"expected {self.model_id!r}")
        return self._inner

    @property
    def loaded(self) -> bool:
        return self._inner is not None

    def stats(self) -> str:
        return f"cache hits={self.hits} misses={self.misses} model_loaded={self.loaded}"

    def close(self) -> None:
        if self._inner is not None:
            self._inner.close()
