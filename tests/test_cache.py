"""The call cache: hits, misses, sampled seeds, lazy model load, resume after a kill, concurrency."""
import multiprocessing as mp

import pytest

from lmad.backends import ChatRequest, open_backend
from lmad.backends.cache import CachedBackend
from lmad.backends.scripted import ScriptedBackend


def req(text, temperature=0.0, seed=0):
    return ChatRequest(messages=(("user", text),), temperature=temperature, max_tokens=16, seed=seed)


def counting_factory(log, responder=None):
    def factory():
        log.append("load")
        return ScriptedBackend(name="double", responder=responder or (lambda r: f"echo {r.messages[-1][1]} {r.seed}"))
    return factory


def test_miss_then_hit_and_lazy_load(tmp_path):
    loads = []
    batch = [req("a"), req("b"), req("a")]  # duplicate inside one batch is computed once
    first = CachedBackend(counting_factory(loads), "double@test-double", tmp_path)
    out1 = first.generate(batch)
    assert (first.hits, first.misses) == (1, 2)
    assert [c.cached for c in out1] == [False, False, False] and out1[0].text == out1[2].text

    second = CachedBackend(counting_factory(loads), "double@test-double", tmp_path)
    out2 = second.generate(batch)
    assert (second.hits, second.misses) == (3, 0)
    assert all(c.cached for c in out2) and [c.text for c in out2] == [c.text for c in out1]
    assert loads == ["load"]  # the all-cached stage never built the model
    assert not second.loaded


def test_sampled_calls_are_keyed_by_seed(tmp_path):
    backend = CachedBackend(counting_factory([]), "double@test-double", tmp_path)
    out = backend.generate([req("q", 0.7, seed=1), req("q", 0.7, seed=2), req("q", 0.7, seed=1)])
    assert backend.misses == 2 and out[0].text != out[1].text and out[0].text == out[2].text
    assert req("q", 0.7, 1).key("m") != req("q", 0.7, 2).key("m")
    assert req("q", 0.7, 1).key("m") != req("q", 0.7, 1).key("other-model")
    assert req("q", 0.7, 1).key("m") != req("q", 0.9, 1).key("m")


def test_resume_after_kill_reissues_only_unfinished_calls(tmp_path):
    calls = []

    def dying(r):
        calls.append(r.messages[-1][1])
        if len(calls) > 4:
            raise KeyboardInterrupt("killed")  # the job dies mid-stage
        return "ok"

    batch = [req(f"q{i}") for i in range(10)]
    killed = CachedBackend(counting_factory([], dying), "double@test-double", tmp_path, chunk_size=2)
    with pytest.raises(KeyboardInterrupt):
        killed.generate(batch)
    assert len(calls) == 5  # two chunks of 2 persisted, the fifth call died

    resumed = CachedBackend(counting_factory([]), "double@test-double", tmp_path, chunk_size=2)
    resumed.generate(batch)
    assert (resumed.hits, resumed.misses) == (4, 6)


def test_corrupt_entry_is_recomputed(tmp_path):
    backend = CachedBackend(counting_factory([]), "double@test-double", tmp_path)
    backend.generate([req("x")])
    entry = next(tmp_path.rglob("*.json"))
    entry.write_text("{not json")
    again = CachedBackend(counting_factory([]), "double@test-double", tmp_path)
    assert again.generate([req("x")])[0].text.startswith("echo x") and again.misses == 1


def _worker(root, n):
    backend = open_backend({"backend": "scripted", "name": "shared"}, root, chunk_size=1)
    backend.generate([req(f"shared {i}") for i in range(n)])
    return backend.hits + backend.misses


def test_concurrent_jobs_share_the_cache_without_errors(tmp_path):
    with mp.get_context("spawn").Pool(4) as pool:
        totals = pool.starmap(_worker, [(str(tmp_path), 50)] * 4)
    assert totals == [50] * 4
    assert len(list(tmp_path.rglob("*.json"))) == 50
    assert not list(tmp_path.rglob(".tmp-*"))
