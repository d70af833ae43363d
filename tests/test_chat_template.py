"""Per-model chat-template options (config ``models.<name>.chat_template_kwargs``): every
backend passes them, they are part of the model's cache identity, and thinking text that
still appears is removed before answer extraction (and recorded)."""

import types

from hypothesis import given, strategies as st

from lmad.answers.span import extract_answer
from lmad.answers.text import THINK_REMOVED, strip_think
from lmad.backends import backend_identity, open_backend, weights_identity
from lmad.backends.base import ChatRequest
from lmad.backends.openai_backend import OpenAIBackend, request_body
from lmad.backends.scripted import ScriptedBackend
from lmad.backends.transformers_backend import TransformersBackend
from lmad.backends.vllm_backend import VLLMBackend, _StructuredOutputs

NO_THINK = {"enable_thinking": False}
REQ = ChatRequest(messages=(("user", "Is Paris in France?"),), max_tokens=8)


def test_openai_request_body_carries_the_kwargs():
    assert request_body("m", REQ, NO_THINK)["chat_template_kwargs"] == {"enable_thinking": False}
    assert "chat_template_kwargs" not in request_body("m", REQ)
    be = OpenAIBackend("qwen3-8b", "served", "http://127.0.0.1:1/v1", revision="r1", chat_template_kwargs=NO_THINK)
    spec = {"name": "qwen3-8b", "backend": "openai", "model": "served", "base_url": "x", "revision": "r1",
            "chat_template_kwargs": NO_THINK}
    assert be.model_id == weights_identity(spec) == "qwen3-8b@r1+enable_thinking=false"
    assert backend_identity(spec) == "qwen3-8b@r1+enable_thinking=false|openai"


def test_vllm_chat_gets_the_kwargs():
    seen = {}

    class FakeLLM:
        def chat(self, messages, params, use_tqdm=False, **kw):
            seen.update(kw)
            gen = types.SimpleNamespace(text="yes", token_ids=[1], finish_reason="stop")
            return [types.SimpleNamespace(outputs=[gen], prompt_token_ids=[1, 2]) for _ in messages]

    be = VLLMBackend.__new__(VLLMBackend)  # no engine: only the call into LLM.chat is checked
    be.llm, be._SamplingParams = FakeLLM(), dict
    be._structured = _StructuredOutputs(types.SimpleNamespace(StructuredOutputsParams=dict))
    be.chat_template_kwargs = NO_THINK
    assert be.generate([REQ])[0].text == "yes"
    assert seen == {"chat_template_kwargs": {"enable_thinking": False}}
    be.chat_template_kwargs = {}
    seen.clear()
    be.generate([REQ])
    assert seen == {}


def test_transformers_apply_chat_template_gets_the_kwargs():
    seen = {}

    class FakeTokenizer:
        def apply_chat_template(self, messages, **kw):
            seen.update(kw)
            return [1, 2, 3]

    be = TransformersBackend.__new__(TransformersBackend)
    be.tok, be.chat_template_kwargs = FakeTokenizer(), NO_THINK
    assert be._prompt_ids(REQ) == [1, 2, 3]
    assert seen["enable_thinking"] is False and seen["add_generation_prompt"] is True


def test_kwargs_change_the_cache_key(tmp_path):
    plain = {"name": "m", "backend": "scripted", "model": "m"}
    thinking_off = plain | {"chat_template_kwargs": NO_THINK}
    a, b = open_backend(plain, tmp_path), open_backend(thinking_off, tmp_path)
    assert a.model_id == "m@test-double|scripted" and b.model_id != a.model_id
    assert REQ.key(a.model_id) != REQ.key(b.model_id)
    a.generate([REQ])
    b.generate([REQ])  # not served from a's entry
    assert (a.misses, b.misses, b.hits) == (1, 1, 0)
    assert isinstance(b.inner, ScriptedBackend) and b.inner.chat_template_kwargs == NO_THINK
    assert open_backend(thinking_off, tmp_path).generate([REQ])[0].cached


def test_think_blocks_are_removed_and_recorded():
    assert extract_answer("<think>maybe Lyon.\nAnswer: Lyon</think>\nAnswer: Paris") == \
        ("Paris", "answer_line" + THINK_REMOVED)
    # cut off while thinking: nothing after it is an answer
    assert extract_answer("<think>Let me see. Answer: Lyon") == ("", "empty" + THINK_REMOVED)
    # the template opened the block in the prompt: only the closing tag is in the reply
    assert extract_answer("so it is Rome</think>\n\nAnswer: Rome") == ("Rome", "answer_line" + THINK_REMOVED)
    assert extract_answer("Answer: Oslo") == ("Oslo", "answer_line")


@given(st.text(alphabet=st.sampled_from(list("ab <>/think\n:Answer")), max_size=60))
def test_strip_think_never_raises_and_leaves_no_tag(text):
    out, removed = strip_think(text)
    assert "<think>" not in out.lower() and "</think>" not in out.lower()
    assert removed == (out != text)
    extract_answer(text)
