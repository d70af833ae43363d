"""The call cache: hits, misses, sampled seeds, lazy model load, resume after a kill, concurrency;
every kind of corrupted entry is a miss with a warning naming file and line, never a hit;
lone surrogates are sanitized and recorded; the old one-file-per-call store migrates; a closed
segment is indexed from its sidecar, which is ignored when it does not match its segment."""
import hashlib
import json
import logging
import multiprocessing as mp
import os

import pytest
from hypothesis import given, settings, strategies as st

from lmad.backends import ChatRequest, Completion, open_backend
from lmad.backends.cache import SEGMENT_SUFFIX, CachedBackend, CallStore, checksum, main as cache_main, read_sidecar
from lmad.backends.scripted import ScriptedBackend


def segments(root):
    return sorted(root.rglob(f"*{SEGMENT_SUFFIX}"))


def stored_keys(root):
    return [json.loads(line)["key"] for seg in segments(root) for line in seg.read_text().splitlines()]


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


def test_computed_tokens_count_the_models_work_only(tmp_path):
    """A job's computed tokens are its misses': a hit or an in-batch duplicate costs the model nothing."""
    batch = [req("a b"), req("c"), req("a b")]
    first = CachedBackend(counting_factory([]), "double@test-double", tmp_path)
    out = first.generate(batch)
    assert first.computed_prompt_tokens == out[0].prompt_tokens + out[1].prompt_tokens > 0
    assert first.computed_completion_tokens == out[0].completion_tokens + out[1].completion_tokens > 0
    second = CachedBackend(counting_factory([]), "double@test-double", tmp_path)
    second.generate(batch + [req("d")])
    assert second.hits == 3 and second.computed_prompt_tokens == ScriptedBackend(name="x").prompt_tokens(req("d"))


def test_sampled_calls_are_keyed_by_seed(tmp_path):
    backend = CachedBackend(counting_factory([]), "double@test-double", tmp_path)
    out = backend.generate([req("q", 0.7, seed=1), req("q", 0.7, seed=2), req("q", 0.7, seed=1)])
    assert backend.misses == 2 and out[0].text != out[1].text and out[0].text == out[2].text
    assert req("q", 0.7, 1).key("m") != req("q", 0.7, 2).key("m")
    assert req("q", 0.7, 1).key("m") != req("q", 0.7, 1).key("other-model")
    assert req("q", 0.7, 1).key("m") != req("q", 0.9, 1).key("m")


def _key_as_it_always_was(r: ChatRequest, model_id: str) -> str:
    """The original definition of the key (dataclasses.asdict + json.dumps): stored calls
    are found by it, so a faster ``ChatRequest.key`` must give the same bytes."""
    from dataclasses import asdict, replace

    payload = {"model": model_id, **asdict(replace(r, fallbacks=()))}
    del payload["fallbacks"], payload["role"]  # a tag, not in the key
    if not payload["sampling"]:  # a role's sampling override, in the key only when set
        del payload["sampling"]
    return hashlib.sha256(json.dumps(payload, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


KEYED = [
    ChatRequest(messages=(("system", "You are a careful solver."), ("user", "Question: who? " * 200)),
                temperature=0.5, max_tokens=128, seed=123,
                constraint={"json": {"type": "object", "properties": {"b": {"type": "string"}, "a": {"type": "integer"}}}}),
    ChatRequest(messages=(("user", "hi ünïcode \"quoted\"\n"),), stop=("\n",)),
    ChatRequest(messages=(("user", "judge"),), constraint={"choice": ["correct", "incorrect"]},
                fallbacks=(ChatRequest(messages=(("user", "j"),)),)),
]


def test_the_call_key_is_what_it_always_was():
    # known values, computed by the original asdict-based key: existing caches must still hit
    assert KEYED[0].key("m@x") == "67edd3d520022eaa30194b1e7489fdb6526ce8aa9e345051a45e584fae377698"
    assert ChatRequest(messages=(("user", "hi ünïcode"),), stop=("\n",)).key("scripted@test-double") == (
        "d622cb47587d0dc280e480f0492dce355fa884a8d787fc3362b3355a7f7146ff")
    for r in KEYED:
        assert r.key("double@test-double") == _key_as_it_always_was(r, "double@test-double")
    # a field added to the request must enter the key: the key lists these fields by hand
    from dataclasses import fields

    assert [f.name for f in fields(ChatRequest)] == [
        "messages", "temperature", "max_tokens", "seed", "stop", "constraint", "fallbacks", "role", "sampling"]


_TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=60)  # what str.encode() accepts
_SPECIAL = st.sampled_from(["", "\n", "\r\n", '"', "\\", "\t", "\x00", "\x1f", "\x7f", "\u2028", "é", "\U0001F600"])
_LINES = st.lists(_SPECIAL | _TEXT, max_size=8).map("".join)


@settings(max_examples=300, deadline=None)
@given(messages=st.lists(st.tuples(st.sampled_from(["system", "user", "assistant"]), _LINES), min_size=1, max_size=3),
       temperature=st.sampled_from([0.0, 0.1, 0.7, 1, 1e-7, 1e300, float("inf"), float("nan"), True]),
       max_tokens=st.integers(1, 4096), seed=st.integers(0, 2**70), stop=st.lists(_TEXT, max_size=2).map(tuple),
       constraint=st.none() | st.builds(lambda v: {"choice": v}, st.lists(_TEXT, min_size=1, max_size=3)),
       model=_TEXT, repeat=st.booleans(),
       sampling=st.sampled_from([(), (("top_p", 0.5),), (("min_p", 0.1), ("top_k", 20))]))
def test_the_call_key_equals_the_original_definition_on_any_request(messages, temperature, max_tokens, seed, stop,
                                                                      constraint, model, repeat, sampling):
    r = ChatRequest(messages=tuple(messages), temperature=temperature, max_tokens=max_tokens, seed=seed, stop=stop,
                    constraint=constraint, sampling=sampling)
    assert r.key(model) == _key_as_it_always_was(r, model)
    if repeat:  # a second time, with every line's escape memoized
        assert r.key(model) == _key_as_it_always_was(r, model)


def test_the_key_line_memo_stays_within_its_size(monkeypatch):
    from lmad.backends import base

    monkeypatch.setattr(base, "_LINE_MEMO_CHARS", 2000)
    monkeypatch.setattr(base, "_escaped_lines", {})
    monkeypatch.setattr(base, "_memo_chars", 0)
    for i in range(300):
        r = ChatRequest(messages=(("user", f"passage {i % 7} \"quoted\"\nline {i} " + "x" * (i % 50)),))
        assert r.key("m") == _key_as_it_always_was(r, "m")
        held = sum(len(k) + len(v) for k, v in base._escaped_lines.items())
        assert held == base._memo_chars <= 2000


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


def test_a_call_is_durable_the_moment_it_returns_whatever_the_chunk(tmp_path):
    """Chunk 512 (the openai default): the calls that returned before the kill are stored."""
    calls = []

    def dying(r):
        calls.append(r.messages[-1][1])
        if len(calls) > 3:
            raise KeyboardInterrupt("killed")
        return "ok"

    batch = [req(f"q{i}") for i in range(10)]
    with pytest.raises(KeyboardInterrupt):
        CachedBackend(counting_factory([], dying), "double@test-double", tmp_path, chunk_size=512).generate(batch)
    resumed = CachedBackend(counting_factory([]), "double@test-double", tmp_path, chunk_size=512)
    resumed.generate(batch)
    assert (resumed.hits, resumed.misses) == (3, 7)


def _entry(tmp_path, text="x"):
    backend = CachedBackend(counting_factory([]), "double@test-double", tmp_path)
    backend.generate([req(text)])
    [seg] = segments(tmp_path)
    return seg, json.loads(seg.read_text())


def _resign(entry):
    entry["sha256"] = checksum(**{k: v for k, v in entry.items() if k != "sha256"})
    return entry


CORRUPTIONS = {
    "not json": lambda e: "{not json",
    "empty object": lambda e: {},
    "null": lambda e: None,
    "a list": lambda e: [e],
    "extra key": lambda e: {**e, "extra": 1},
    "text edited": lambda e: {**e, "text": "Answer: something else"},
    "text null (re-signed)": lambda e: _resign({**e, "text": None}),
    "tokens a word (re-signed)": lambda e: _resign({**e, "prompt_tokens": "many"}),
    "tokens a bool (re-signed)": lambda e: _resign({**e, "completion_tokens": True}),
    "error finish (re-signed)": lambda e: _resign({**e, "finish_reason": "error"}),
    "another key": lambda e: _resign({**e, "key": hashlib.sha256(b"other").hexdigest()}),
    "checksum missing": lambda e: {k: v for k, v in e.items() if k != "sha256"},
}


@pytest.mark.parametrize("kind", CORRUPTIONS)
def test_a_corrupt_entry_is_a_miss_with_a_warning_never_a_hit(tmp_path, caplog, kind):
    seg, entry = _entry(tmp_path)
    bad = CORRUPTIONS[kind](entry)
    line = bad if isinstance(bad, str) else json.dumps(bad)
    if kind == "another key":  # keep the requested key at the start so the index files it under that key
        line = '{"key":"%s",' % entry["key"] + json.dumps(bad)[1:]
    seg.write_text(line + "\n")
    again = CachedBackend(counting_factory([], lambda r: "recomputed"), "double@test-double", tmp_path)
    with caplog.at_level(logging.WARNING, logger="lmad.backends.cache"):
        out = again.generate([req("x")])
    assert out[0].text == "recomputed" and not out[0].cached and (again.hits, again.misses) == (0, 1)
    assert again.store.invalid == 1 and "invalid_entries=1" in again.stats()
    assert any(str(seg) in r.getMessage() and "line 1" in r.getMessage() for r in caplog.records)
    # the recomputed call is stored in a new segment and served from then on
    third = CachedBackend(counting_factory([]), "double@test-double", tmp_path)
    assert third.generate([req("x")])[0].text == "recomputed" and third.hits == 1


def test_a_line_cut_by_a_kill_is_ignored_and_later_lines_still_serve(tmp_path):
    backend = CachedBackend(counting_factory([]), "double@test-double", tmp_path)
    backend.generate([req("a"), req("b")])
    [seg] = segments(tmp_path)
    seg.write_bytes(seg.read_bytes()[:-20])  # the second line lost its end
    again = CachedBackend(counting_factory([]), "double@test-double", tmp_path)
    again.generate([req("a"), req("b")])
    assert (again.hits, again.misses, again.store.invalid) == (1, 1, 0)


def test_lone_surrogates_are_replaced_and_recorded(tmp_path, caplog):
    backend = CachedBackend(counting_factory([], lambda r: "x\ud800 Answer: y"), "double@test-double", tmp_path)
    with caplog.at_level(logging.WARNING, logger="lmad.backends.cache"):
        [out] = backend.generate([req("s")])
    assert out.text == "x\ufffd Answer: y" and out.sanitized and "sanitized=1" in backend.stats()
    assert "lone surrogates" in caplog.text
    again = CachedBackend(counting_factory([]), "double@test-double", tmp_path)
    [hit] = again.generate([req("s")])
    assert hit.cached and hit.sanitized and hit.text == out.text
    assert not list(tmp_path.rglob(".tmp-*"))
    import pyarrow as pa
    pa.table({"text": [hit.text]})  # writable to Parquet


def test_migrate_imports_the_old_one_file_per_call_store(tmp_path, caplog):
    model_dir = tmp_path / "double_test-double"
    keys = [req(f"old {i}").key("double@test-double") for i in range(3)]
    for i, key in enumerate(keys):
        (model_dir / key[:2]).mkdir(parents=True, exist_ok=True)
        (model_dir / key[:2] / f"{key}.json").write_text(json.dumps(
            {"text": f"old reply {i}", "prompt_tokens": 2, "completion_tokens": 3, "finish_reason": "stop"}))
    bad = model_dir / "ab" / ("ab" + "0" * 62 + ".json")
    bad.parent.mkdir(exist_ok=True)
    bad.write_text('{"text": null}')
    with caplog.at_level(logging.WARNING, logger="lmad.backends.cache"):
        CachedBackend(counting_factory([]), "double@test-double", tmp_path)
    assert "python -m lmad.backends.cache migrate" in caplog.text  # the old store is named, not silently ignored
    assert cache_main(["migrate", str(tmp_path)]) == 0
    assert bad.exists() and len(list(model_dir.rglob("*.json"))) == 1  # imported files are gone, the bad one stays
    again = CachedBackend(counting_factory([]), "double@test-double", tmp_path)
    out = again.generate([req(f"old {i}") for i in range(3)])
    assert [c.text for c in out] == [f"old reply {i}" for i in range(3)] and again.hits == 3


def _worker(root, n):
    backend = open_backend({"backend": "scripted", "name": "shared"}, root, chunk_size=1)
    backend.generate([req(f"shared {i}") for i in range(n)])
    return backend.hits + backend.misses


def test_concurrent_jobs_share_the_cache_without_errors(tmp_path):
    with mp.get_context("spawn").Pool(4) as pool:
        totals = pool.starmap(_worker, [(str(tmp_path), 50)] * 4)
    assert totals == [50] * 4
    keys = stored_keys(tmp_path)  # a call two jobs computed at once may be stored twice, never torn
    assert len(set(keys)) == 50 and len(segments(tmp_path)) <= 4
    reader = open_backend({"backend": "scripted", "name": "shared"}, tmp_path)
    reader.generate([req(f"shared {i}") for i in range(50)])
    assert (reader.hits, reader.misses, reader.store.invalid) == (50, 0, 0)


# ---- sidecar indexes: a closed segment is indexed from its sidecar, never trusted over its lines


def _store_dir(tmp_path):
    [folder] = {seg.parent for seg in segments(tmp_path)}
    return folder


def test_a_closed_segment_leaves_a_sidecar_that_the_next_reader_loads_instead_of_parsing(tmp_path, monkeypatch):
    writer = CachedBackend(counting_factory([]), "double@test-double", tmp_path)
    writer.generate([req(f"q{i}") for i in range(20)])
    writer.close()
    [seg] = segments(tmp_path)
    assert read_sidecar(seg) is not None
    parsed = []
    monkeypatch.setattr(CallStore, "_scan", lambda self, s: parsed.append(s))
    reader = CachedBackend(counting_factory([]), "double@test-double", tmp_path)
    out = reader.generate([req(f"q{i}") for i in range(20)])
    assert parsed == [] and (reader.hits, reader.misses) == (20, 0)
    assert [c.text for c in out] == [f"echo q{i} 0" for i in range(20)]


@pytest.mark.parametrize("damage", ["sidecar garbage", "sidecar truncated", "segment appended", "segment rewritten"])
def test_a_sidecar_that_does_not_match_its_segment_is_ignored(tmp_path, damage):
    writer = CachedBackend(counting_factory([]), "double@test-double", tmp_path)
    writer.generate([req("a"), req("b")])
    writer.close()
    [seg] = segments(tmp_path)
    side = seg.with_name(seg.name + ".idx")
    if damage == "sidecar garbage":
        side.write_bytes(b"not an index")
    elif damage == "sidecar truncated":
        side.write_bytes(side.read_bytes()[:-8])
    elif damage == "segment appended":  # a line added after the sidecar: the size no longer matches
        extra = CachedBackend(counting_factory([]), "double@test-double", tmp_path / "other")
        extra.generate([req("c")])
        extra.close()
        seg.write_bytes(seg.read_bytes() + next((tmp_path / "other").rglob(f"*{SEGMENT_SUFFIX}")).read_bytes())
    else:  # same size, new content (another run's lines): the mtime no longer matches
        lines, before = seg.read_bytes().splitlines(keepends=True), seg.stat()
        seg.write_bytes(lines[1] + lines[0])
        os.utime(seg, ns=(before.st_atime_ns, before.st_mtime_ns + 10**9))  # even where mtimes are coarse
    assert read_sidecar(seg) is None
    reader = CachedBackend(counting_factory([]), "double@test-double", tmp_path)
    asked = [req("a"), req("b")] + ([req("c")] if damage == "segment appended" else [])
    reader.generate(asked)
    assert (reader.hits, reader.misses, reader.store.invalid) == (len(asked), 0, 0)


def test_a_bad_copy_falls_back_to_another_segments_copy_of_the_same_call(tmp_path, caplog):
    for _ in range(2):  # two jobs computed the same call: two segments hold it
        job = CachedBackend(counting_factory([]), "double@test-double", tmp_path, chunk_size=1)
        job.store.refresh = lambda: None  # neither saw the other's copy
        job.generate([req("same")])
        job.close()
    first, second = segments(tmp_path)
    store = CallStore(first.parent)
    store.refresh()
    key = json.loads(first.read_text())["key"]
    assert store.get(key) is not None  # a key no batch looked up: every segment is indexed
    loc = store._index[bytes.fromhex(key)]
    chosen = store._segments[store._seg_of[loc]]
    chosen.write_bytes(b"{" + chosen.read_bytes()[1:].replace(b"echo", b"ECHO"))  # the copy the index chose breaks
    reader = CachedBackend(counting_factory([], lambda r: "recomputed"), "double@test-double", tmp_path)
    with caplog.at_level(logging.WARNING, logger="lmad.backends.cache"):
        out = reader.generate([req("same")])
    assert out[0].text == "echo same 0" and out[0].cached  # the other segment's copy
    assert reader.store.invalid == 1


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 12), st.booleans()), min_size=1, max_size=40))
def test_any_mix_of_writers_closed_or_open_serves_every_stored_call(plan):
    """Writers 0-2 put calls (some keys twice, across writers) and each is closed (sidecar) or
    left open (parsed); a fresh reader serves every stored call with the text it was stored with."""
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        writers = [CallStore(folder) for _ in range(3)]
        stored = {}
        for who, q, _ in plan:
            key = hashlib.sha256(f"q{q}".encode()).hexdigest()
            text = f"answer {q}"  # every copy of a call is the same reply (the same request)
            writers[who].put(key, Completion(text=text, prompt_tokens=1, completion_tokens=2, finish_reason="stop"))
            stored[key] = text
        closing = {who for who, _, close in plan if close}
        for who in closing:
            writers[who].close()
        reader = CallStore(folder)
        reader.refresh()
        assert {k: reader.get(k).text for k in stored} == stored
        assert reader.get(hashlib.sha256(b"never").hexdigest()) is None and reader.invalid == 0
        for who in set(range(3)) - closing:
            writers[who].close()


@settings(max_examples=40, deadline=None)
@given(plan=st.lists(st.tuples(st.integers(0, 2), st.integers(0, 15), st.booleans()), min_size=1, max_size=40),
       asked=st.lists(st.integers(0, 19), max_size=25), many=st.booleans())
def test_a_batch_lookup_finds_what_indexing_everything_finds(plan, asked, many):
    """``prefetch`` (a batch's keys looked up in the closed segments' sidecars, not indexing every
    stored call) serves the same replies as the full index: keys stored once, twice, in closed or
    open segments, keys that share their first 8 bytes (the lookup's hash), keys never stored."""
    import tempfile
    from pathlib import Path

    def key(q):  # q % 4 share their first 16 hex digits: colliding prefixes
        return f"{q % 4:016x}" + hashlib.sha256(f"q{q}".encode()).hexdigest()[16:]

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        writers = [CallStore(folder) for _ in range(3)]
        stored = {}
        for who, q, _ in plan:
            if many:  # > 64 of a batch's keys in one segment: that segment is indexed whole
                for extra in range(70):
                    writers[who].put(key(100 + extra), Completion(text=f"answer {100 + extra}", prompt_tokens=1,
                                                                  completion_tokens=1, finish_reason="stop"))
                    stored[key(100 + extra)] = f"answer {100 + extra}"
            writers[who].put(key(q), Completion(text=f"answer {q}", prompt_tokens=1, completion_tokens=2,
                                                finish_reason="stop"))
            stored[key(q)] = f"answer {q}"
        for who in {who for who, _, close in plan if close}:
            writers[who].close()
        batch = [key(q) for q in asked] + (list(stored)[:80] if many else []) + ["not hex", "ab"]
        reader = CallStore(folder)
        reader.refresh()
        reader.prefetch(batch)
        for k in batch:
            got = reader.get(k)
            assert (got.text if got else None) == stored.get(k), k
        if not many:  # ... without indexing a closed segment whole
            assert len(reader._lazy) == len({who for who, _, close in plan if close})
        assert {k: reader.get(k).text for k in stored} == stored  # keys no batch asked for, too
        assert reader.invalid == 0
        for w in writers:
            w.close()


def test_a_store_written_after_its_close_indexes_its_new_segment_on_its_own(tmp_path):
    store = CallStore(tmp_path)
    keys = [hashlib.sha256(f"k{i}".encode()).hexdigest() for i in range(4)]
    reply = Completion(text="t", prompt_tokens=1, completion_tokens=1, finish_reason="stop")
    for k in keys[:2]:
        store.put(k, reply)
    store.close()
    for k in keys[2:]:  # reopened: a new segment, whose sidecar holds only its own two lines
        store.put(k, reply)
    store.close()
    assert sorted(len(read_sidecar(seg)[0]) for seg in segments(tmp_path)) == [2, 2]
    reader = CallStore(tmp_path)
    reader.refresh()
    assert all(reader.get(k).text == "t" for k in keys) and reader.invalid == 0


def test_a_job_closes_its_stores_so_the_next_job_reads_sidecars(tmp_path):
    """A job (lmad.job.execute) closes the stores its stage opened (lmad.backends.close_stores)."""
    from types import SimpleNamespace

    from lmad import backends
    from lmad.job import execute
    from lmad.smk import build_job

    def stage(out, provenance):
        open_backend({"backend": "scripted", "name": "job"}, out).generate([req("a"), req("b")])

    job = SimpleNamespace(log=[str(tmp_path / "job.log")], input={}, output={"out": str(tmp_path / "cache")},
                          params={}, rule="stage", wildcards={})
    opened = list(backends.OPENED)
    backends.OPENED[:] = []  # this job's backends only, as in a job's own process
    try:
        execute(build_job(job, stage))
    finally:
        backends.OPENED[:] = opened
    [seg] = segments(tmp_path / "cache")
    assert read_sidecar(seg) is not None and json.loads((tmp_path / "job.stats.json").read_text())["calls"] == 2


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(alphabet=st.sampled_from(list("ab \n\t\r\x0b\x0c\x1c\u2028\u00a0\u3000")), max_size=40),
                min_size=1, max_size=3))
def test_scripted_prompt_tokens_count_words_as_split_does(texts):
    """The test double's word count, kept per line (its memo), equals str.split() on the messages."""
    backend = ScriptedBackend()
    req = ChatRequest(messages=tuple(("user", t) for t in texts))
    assert backend.prompt_tokens(req) == sum(len(t.split()) for t in texts)
    again = ChatRequest(messages=tuple(("user", t + "\n" + t) for t in texts))  # lines counted before
    assert backend.prompt_tokens(again) == 2 * sum(len(t.split()) for t in texts)
