"""Backends by name. A backbone's config entry chooses one with ``backend:``."""
from __future__ import annotations

import os
from typing import Any

from .. import backend_registry as registry
from .base import Backend, ChatRequest, Completion
from .cache import CachedBackend
from .identity import backend_identity, role_sampling_of, weights_identity

__all__ = ["Backend", "ChatRequest", "Completion", "CachedBackend", "backend_identity", "weights_identity", "make_backend",
           "open_backend",
           "run_stats"]


def make_backend(spec: dict[str, Any]) -> Backend:
    """Build the backend a model spec names (lmad.backend_registry). ``spec`` is a resolved entry
    of config ``models``."""
    entry = registry.backend(spec["backend"])
    if entry.served_by and spec.get("serve"):  # one server per run, the stage jobs as its clients
        from .serve import served_backend

        return served_backend(spec, weights_identity(spec))
    return entry.load()(**entry.constructor_kwargs(spec))


# Every cached backend this process opened: a job's run statistics (lmad.job.execute).
OPENED: list[CachedBackend] = []


def run_stats() -> dict[str, Any]:
    """Calls, cache hits, model loads and the tokens the models computed (misses only) of the
    backends this process (one job) opened."""
    return {"calls": sum(b.hits + b.misses for b in OPENED), "hits": sum(b.hits for b in OPENED),
            "misses": sum(b.misses for b in OPENED), "loads": sum(b.loaded for b in OPENED),
            "computed_prompt_tokens": sum(b.computed_prompt_tokens for b in OPENED),
            "computed_completion_tokens": sum(b.computed_completion_tokens for b in OPENED),
            "models": sorted({b.model_id for b in OPENED})}


def close_stores() -> None:
    """Close the call stores of every backend this process opened (their segments get fsynced
    and their sidecar indexes written, which the next jobs load instead of parsing the lines).
    The models are left to the process's exit."""
    for backend in OPENED:
        backend.store.close()


def open_backend(spec: dict[str, Any], cache_dir: str | os.PathLike, chunk_size: int | None = None) -> CachedBackend:
    """The backend behind the persistent call cache — what every stage talks to.
    The model itself loads on the first cache miss."""
    # a committee's members (lmad.committees) are for the stages; the backend is the first member's entry
    spec = {k: v for k, v in spec.items() if k != "committee"}
    # a served model's jobs are clients (registry.runs_as)
    chunk = chunk_size or spec.get("cache_chunk") or registry.runs_as(spec).chunk
    backend = CachedBackend(lambda: make_backend(spec), backend_identity(spec), cache_dir, chunk_size=chunk,
                            context_window=spec.get("max_model_len"), weights_id=weights_identity(spec),
                            role_sampling=role_sampling_of(spec))
    OPENED.append(backend)
    return backend
