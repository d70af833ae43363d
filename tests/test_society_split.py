"""The societies' construction / held-out split (config societies.split, lmad.societies.construction_split):
per benchmark, seeded, reproducible; a society is selected on construction questions only, and the
tables with a society column score the held-out questions only."""
from __future__ import annotations

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lmad import societies as so
from lmad.config_checks import check_society_split
from lmad.schemas import write_table
from lmad.stages import societies as stage

# benchmark -> question count (each benchmark one or two datasets)
benchmarks = st.dictionaries(st.sampled_from(["amc12", "math500", "gpqa", "mmlu-redux"]), st.integers(2, 30),
                             min_size=1, max_size=4)


def keys_of(counts: dict[str, int]) -> list[tuple[str, str, str]]:
    return [(b, f"{b}-{i % 2}", f"q{i}") for b, n in counts.items() for i in range(n)]


@settings(max_examples=60, deadline=None)
@given(benchmarks, st.integers(0, 2**31), st.data())
def test_the_split_is_per_benchmark_seeded_reproducible_and_disjoint(counts, seed, data):
    size = data.draw(st.integers(1, min(counts.values()) - 1))
    keys = keys_of(counts)
    rows = so.construction_split(seed, keys, size)
    assert rows == so.construction_split(seed, list(reversed(keys)), size)  # the order of the questions is no input
    assert sorted((r["benchmark"], r["dataset"], r["qid"]) for r in rows) == sorted(keys)  # every question once
    for b, n in counts.items():
        mine = [r for r in rows if r["benchmark"] == b]
        assert sum(r["split"] == so.CONSTRUCTION for r in mine) == size  # a count per benchmark
        assert sorted(r["rank"] for r in mine) == list(range(n))
    # a larger size extends the same ranking: the sweep's construction sets are nested
    if size + 1 < min(counts.values()):
        bigger = {(r["dataset"], r["qid"]) for r in so.construction_split(seed, keys, size + 1)
                  if r["split"] == so.CONSTRUCTION}
        assert {(r["dataset"], r["qid"]) for r in rows if r["split"] == so.CONSTRUCTION} < bigger


def test_another_seed_draws_another_split():
    keys = keys_of({"amc12": 40})
    pick = [{(r["dataset"], r["qid"]) for r in so.construction_split(s, keys, 10) if r["split"] == so.CONSTRUCTION}
            for s in (0, 1)]
    assert pick[0] != pick[1]


@pytest.mark.parametrize("n, size, sizes, key", [(1, 1, (), "societies.split.size"),  # one question: always an error
                                                 (5, 5, (), "societies.split.size"),
                                                 (5, 9, (), "societies.split.size"),
                                                 (10, 2, (4, 10), "societies.split.sizes")])
def test_a_size_that_leaves_no_held_out_question_fails_naming_the_key(n, size, sizes, key):
    with pytest.raises(ValueError, match=rf"config {key}: .* benchmark 'amc12' has {n}"):
        so.construction_split(0, keys_of({"amc12": n}), size, sizes)


def test_a_transfer_target_holds_out_every_question_and_unknown_benchmarks_fail():
    keys = keys_of({"amc12": 10, "mmlu-redux": 1})  # one question: fine when it constructs nothing
    rows = so.construction_split(0, keys, 4, construct_on={"mmlu-redux": "amc12"})
    assert {r["split"] for r in rows if r["benchmark"] == "mmlu-redux"} == {so.EVALUATION}
    assert sum(r["split"] == so.CONSTRUCTION for r in rows if r["benchmark"] == "amc12") == 4
    with pytest.raises(ValueError, match="config societies.split.construct_on: 'gsm8k' is not a benchmark"):
        so.construction_split(0, keys, 4, construct_on={"mmlu-redux": "gsm8k"})


def config_of(datasets: dict, split: dict) -> dict:
    return {"datasets": datasets, "backbones": ["m"], "societies": {"enabled": True, "split": split}}


def test_the_config_check_fails_before_any_job_when_the_counts_are_known():
    data = {"amc12": {"source": "hf", "n": 30}, "redux-law": {"type": "mmlu-redux", "source": "hf", "n": 20},
            "redux-bio": {"type": "mmlu-redux", "source": "hf", "n": 20}}
    check_society_split(config_of(data, {"size": 29}))  # MMLU-Redux's two datasets are one benchmark of 40
    with pytest.raises(ValueError, match="config societies.split.size: 30 .* 'amc12' has 30"):
        check_society_split(config_of(data, {"size": 30}))
    with pytest.raises(ValueError, match="config societies.split.sizes: 40 .* 'mmlu-redux' has 40"):
        check_society_split(config_of(data, {"size": 10, "sizes": [40], "construct_on": {"amc12": "mmlu-redux"}}))
    with pytest.raises(ValueError, match="config societies.split.construct_on: 'gsm8k'"):
        check_society_split(config_of(data, {"size": 10, "construct_on": {"gsm8k": "amc12"}}))
    check_society_split(config_of(data | {"amc12": {"source": "hf", "n": None}}, {"size": 35}) | {
        "datasets": {"amc12": {"source": "hf", "n": None}}})  # unknown count: rule society_split checks it


# ----------------------------------------------------------------------------- selection and tables


def pool_rows(split: list[dict], agents: int = 4) -> list[dict]:
    """A pool whose agent a is right on question i when (i + a) % agents == 0, except that on the
    construction questions only agent 0 is ever right (so a society built on them picks agent 0
    first, and one that peeked at the held-out questions could not tell)."""
    out = []
    for r in split:
        i = int(r["qid"][1:])
        for a in range(agents):
            right = a == 0 if r["split"] == so.CONSTRUCTION else (i + a) % agents == 0
            out.append({"qid": r["qid"], "dataset": r["dataset"], "split": r["split"], "agent": a,
                        "agent_name": f"t{a}-plain-standard", "temperature": float(a), "persona": "plain",
                        "variant": "standard", "perturb_seed": None, "perturb_scale": 0.0, "seed": 0,
                        "response": "", "answer": "x" if right else f"w{a}", "answer_norm": "x" if right else f"w{a}",
                        "answer_method": "line", "answer_type": "span", "correct": right, "prompt_tokens": 1,
                        "completion_tokens": 1, "finish_reason": "stop", "cached": True})
    return out


@settings(max_examples=25, deadline=None)
@given(benchmarks, st.integers(0, 1000), st.data())
def test_a_society_is_selected_on_construction_questions_and_scored_on_the_held_out_rest(counts, seed, data):
    size = data.draw(st.integers(1, min(counts.values()) - 1))
    split = so.construction_split(seed, keys_of(counts), size)
    pool = pl.DataFrame(pool_rows(split))
    members, evaluation = stage.select_societies(pool, split, 1, 0.5, [0.0], size)
    for r in members:
        if r["selector"] in ("ac_greedy", "top_k"):
            assert r["agent"] == 0 and r["selection_accuracy"] == 100.0  # what only the construction split says
    for r in evaluation:
        n = counts[r["benchmark"]]
        assert r["n"] == (size if r["split"] == so.CONSTRUCTION else n - size)


def test_the_held_out_filter_drops_every_construction_question(tmp_path):
    split = so.construction_split(0, keys_of({"amc12": 12, "gpqa": 7}), 5)
    path = tmp_path / "results" / "m" / "societies" / "split.parquet"
    path.parent.mkdir(parents=True)
    write_table("society_split", split, path)
    frame = pl.DataFrame([{"backbone": "m", "dataset": r["dataset"], "qid": r["qid"], "method": meth}
                          for r in split for meth in ("mad", "mad+ac-greedy")])
    kept = stage.held_out(frame, [str(path)])
    construction = {(r["dataset"], r["qid"]) for r in split if r["split"] == so.CONSTRUCTION}
    assert len(construction) == 10 and not construction & set(kept.select("dataset", "qid").rows())
    assert len(kept) == 2 * (12 + 7 - 10)  # every method on the same held-out questions
    assert stage.held_out(frame, []).equals(frame)  # societies off: every question
