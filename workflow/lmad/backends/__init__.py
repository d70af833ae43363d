"""Backends by name. A backbone's config entry chooses one with ``backend:``."""
from __future__ import annotations

import os
from typing import Any

from .base import Backend, ChatRequest, Completion
from .cache import CachedBackend
from .identity import backend_identity, role_sampling_of, weights_identity

__all__ = ["Backend", "ChatRequest", "Completion", "CachedBackend", "backend_identity", "weights_identity", "make_backend",
           "open_backend",
           "run_stats"]


# settings of workflow-managed serving (lmad.backends.serve), not of the offline vLLM engine
SERVE_KEYS = ("serve", "serve_timeout_s", "server_resources", "max_concurrency")


def make_backend(spec: dict[str, Any]) -> Backend:
    """Build the backend a model spec names. ``spec`` is a resolved entry of config ``models``."""
    kind = spec["backend"]
    if kind == "vllm" and spec.get("serve"):  # one server per run, the stage jobs as its clients
        from .serve import served_backend

        return served_backend(spec, weights_identity(spec))
    kwargs = {k: v for k, v in spec.items() if k not in ("backend", "gguf", "cache_chunk", "resources")}
    if kind == "vllm":  # further engine arguments (config schema: engine_kwargs)
        kwargs = {k: v for k, v in kwargs.items() if k not in SERVE_KEYS}
        kwargs.update(kwargs.pop("engine_kwargs", None) or {})
    else:  # the context window is checked in front of the backend (open_backend); vLLM also sizes its engine by it
        kwargs.pop("max_model_len", None)
    if kind == "transformers":
        from .transformers_backend import TransformersBackend

        return TransformersBackend(**kwargs)
    if kind == "vllm":
        from .vllm_backend import VLLMBackend

        return VLLMBackend(**kwargs)
    if kind == "openai":
        from .openai_backend import OpenAIBackend

        return OpenAIBackend(**kwargs)
    if kind == "scripted":
        from .scripted import ScriptedBackend

        return ScriptedBackend(**kwargs)
    raise ValueError(f"unknown backend {kind!r} (expected transformers, vllm, openai or scripted)")


# Requests per backend call. Durability no longer depends on it (each call is stored as
# the backend reports it): large where the engine needs the whole batch for throughput;
# for vllm a killed chunk is lost, since the engine returns the chunk at once.
CHUNK_BY_BACKEND = {"transformers": 4096, "vllm": 4096, "openai": 512, "scripted": 16}


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
    kind = "openai" if spec.get("serve") else spec["backend"]  # a served model's jobs are clients
    chunk = chunk_size or spec.get("cache_chunk") or CHUNK_BY_BACKEND[kind]
    backend = CachedBackend(lambda: make_backend(spec), backend_identity(spec), cache_dir, chunk_size=chunk,
                            context_window=spec.get("max_model_len"), weights_id=weights_identity(spec),
                            role_sampling=role_sampling_of(spec))
    OPENED.append(backend)
    return backend
