"""The cache identity holds every setting that can change a reply and none that cannot: a
changed dtype, quantization, backend, context length or sampling setting re-issues the calls;
a changed concurrency, batch size, thread count or timeout re-issues none."""
import logging

import pytest

from conftest import scripted_model
from lmad.backends import ChatRequest, backend_identity, open_backend

BASE = {
    "transformers": {"name": "m", "backend": "transformers", "model": "/nonexistent/m", "dtype": "float32"},
    "vllm": {"name": "m", "backend": "vllm", "model": "/nonexistent/m", "dtype": "auto"},
    "openai": {"name": "m", "backend": "openai", "model": "m", "base_url": "http://127.0.0.1:9/v1"},
    "scripted": {"name": "m", **scripted_model("m")},
}

CHANGES_A_REPLY = [
    ("transformers", {"dtype": "bfloat16"}),
    ("transformers", {"max_model_len": 2048}),
    ("vllm", {"dtype": "bfloat16"}),
    ("vllm", {"engine_kwargs": {"quantization": "awq"}}),
    ("vllm", {"engine_kwargs": {"kv_cache_dtype": "fp8"}}),
    ("vllm", {"tensor_parallel_size": 2}),
    ("vllm", {"max_model_len": 4096}),
    ("vllm", {"sampling": {"top_p": 0.9}}),
    ("vllm", {"sampling": {"repetition_penalty": 1.05}}),
    ("openai", {"sampling": {"top_k": 20}}),
    ("openai", {"sampling": {"presence_penalty": 0.5}}),
    ("scripted", {"sampling": {"min_p": 0.05}}),
    ("scripted", {"max_model_len": 512}),
    ("transformers", {"chat_template_kwargs": {"enable_thinking": False}}),
]

CHANGES_NOTHING = [
    ("transformers", {"batch_size": 4}),
    ("transformers", {"threads": 1}),
    ("transformers", {"cache_chunk": 3}),
    ("vllm", {"max_concurrency": 4}),
    ("vllm", {"serve": True}),
    ("vllm", {"gpu_memory_utilization": 0.5}),
    ("vllm", {"enable_prefix_caching": False}),
    ("vllm", {"engine_kwargs": {"max_num_seqs": 8, "max_num_batched_tokens": 4096}}),
    ("openai", {"max_concurrency": 2, "timeout_s": 5, "max_retries": 1, "backoff_s": 0.1}),
    ("openai", {"base_url": "http://127.0.0.1:10/v1"}),
    ("vllm", {"sampling": {"top_p": 1.0, "top_k": -1}}),   # the neutral values
]


@pytest.mark.parametrize("kind,change", CHANGES_A_REPLY)
def test_a_setting_that_changes_a_reply_changes_the_identity(kind, change):
    assert backend_identity({**BASE[kind], **change}) != backend_identity(BASE[kind])


@pytest.mark.parametrize("kind,change", CHANGES_NOTHING)
def test_a_setting_that_cannot_change_a_reply_leaves_the_identity(kind, change):
    assert backend_identity({**BASE[kind], **change}) == backend_identity(BASE[kind])


def test_the_backend_kind_is_part_of_the_identity():
    same_weights = [{**BASE["transformers"], "model": "/nonexistent/m"},
                    {**BASE["vllm"], "model": "/nonexistent/m", "dtype": "float32"}]
    assert len({backend_identity(s) for s in same_weights}) == 2


def test_a_missing_dtype_is_the_backends_default_and_auto_is_keyed_by_what_it_resolves_to():
    from lmad.backends.cpu_dtype import machine_dtype

    spec = {k: v for k, v in BASE["transformers"].items() if k != "dtype"}
    assert backend_identity(spec) == backend_identity({**spec, "dtype": "float32"})
    auto = {**spec, "dtype": "auto"}
    assert backend_identity(auto) == backend_identity({**spec, "dtype": machine_dtype()})
    assert "dtype=auto" not in backend_identity(auto)


def requests():
    return [ChatRequest(messages=(("user", f"q{i}"),), temperature=0.5, seed=i, max_tokens=8) for i in range(5)]


def issued(spec, cache):
    backend = open_backend(spec, cache)
    backend.generate(requests())
    return backend.misses


@pytest.mark.parametrize("change", [{"sampling": {"top_p": 0.8}}, {"max_model_len": 4096}])
def test_changing_an_identity_setting_reissues_every_call(tmp_path, change):
    spec = BASE["scripted"]
    assert issued(spec, tmp_path) == 5 and issued(spec, tmp_path) == 0
    assert issued({**spec, **change}, tmp_path) == 5


def test_changing_the_chunk_size_reissues_none(tmp_path):
    spec = BASE["scripted"]
    assert issued(spec, tmp_path) == 5
    assert issued({**spec, "cache_chunk": 2}, tmp_path) == 0


def test_a_store_of_the_old_identity_is_named_and_never_served(tmp_path, caplog):
    """Before backend settings were part of the identity, a model's calls lived under its
    weights identity alone (e.g. ``m@test-double``): possibly another dtype's replies."""
    from lmad.backends.cache import CachedBackend
    from lmad.backends.scripted import ScriptedBackend

    inner = ScriptedBackend("m", responder=None)
    old = CachedBackend(lambda: inner, inner.model_id, tmp_path)   # how the old identity stored them
    old.generate(requests())
    old.close()
    with caplog.at_level(logging.WARNING):
        assert issued(BASE["scripted"], tmp_path) == 5
    assert "not served" in caplog.text and str(tmp_path / "m_test-double") in caplog.text


def test_a_long_batch_logs_done_total_speed_and_eta(tmp_path, caplog, monkeypatch):
    monkeypatch.setenv("LMAD_PROGRESS_S", "0")
    with caplog.at_level(logging.INFO, logger="lmad.backends.cache"):
        issued(BASE["scripted"], tmp_path)
    lines = [r.getMessage() for r in caplog.records if "calls," in r.getMessage()]
    assert len(lines) == 5 and lines[-1].startswith("model m@test-double|scripted: 5/5 calls, ")
    assert "generated tokens/s, ETA 0:00:00" in lines[-1]


def role_requests(role):
    return [ChatRequest(messages=(("user", f"{role} q{i}"),), temperature=0.5, seed=i, max_tokens=8, role=role)
            for i in range(3)]


def issued_by_role(spec, cache):
    backend = open_backend(spec, cache)
    backend.generate(role_requests("judge") + role_requests("solver"))
    return backend.misses


def test_a_role_override_reissues_that_roles_calls_only(tmp_path):
    spec = BASE["scripted"]
    assert issued_by_role(spec, tmp_path) == 6 and issued_by_role(spec, tmp_path) == 0
    judged = {**spec, "role_sampling": {"judge": {"top_p": 0.5}}}
    assert issued_by_role(judged, tmp_path) == 3       # the judge's 3 calls, not the solver's
    assert issued_by_role(judged, tmp_path) == 0
    # an override that equals what the model's calls get anyway changes no key
    assert issued_by_role({**spec, "role_sampling": {"judge": {"top_p": 1.0}, "solver": {"top_k": -1}}}, tmp_path) == 0
    # over a model-wide setting: back to the neutral value is a change for that role
    wide = {**spec, "sampling": {"top_p": 0.9}}
    assert issued_by_role(wide, tmp_path) == 6
    assert issued_by_role({**wide, "role_sampling": {"judge": {"top_p": 0.9}}}, tmp_path) == 0
    assert issued_by_role({**wide, "role_sampling": {"judge": {"top_p": 1.0}}}, tmp_path) == 3


def test_the_role_override_reaches_the_wire():
    """Served and offline vLLM get the same effective settings: the model's, then the role's."""
    from dataclasses import replace

    from lmad.backends.openai_backend import request_body

    req = replace(role_requests("judge")[0], sampling=(("top_p", 0.5),))
    body = request_body("m", req, sampling={"top_p": 0.9, "top_k": 20})
    assert body["top_p"] == 0.5 and body["top_k"] == 20


def test_every_call_role_is_in_the_schema_and_no_other():
    from lmad.backends.base import CALL_ROLES
    from lmad.config_schema import schema as completed

    schema = completed()
    model = schema["properties"]["models"]["additionalProperties"]["properties"]
    assert model["role_sampling"]["propertyNames"]["enum"] == list(CALL_ROLES)
    with pytest.raises(ValueError, match="unknown call role 'chair'"):
        ChatRequest(messages=(("user", "q"),), role="chair")
