"""The pairwise jury as the layered-disagreement paper runs it (docs/studies.md "Pairwise jury"):
four anchored 1-5 sub-scores per answer, swap-checked, the winner by the higher sum, strict
parsing with counted fallbacks, and the 54-pair three-tier severity battery. Jurors are the
scripted test double with responders that score by known rules."""
import json
import re

import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st

from lmad.studies.jury.verdicts import (DIMENSIONS, SUBSCORE_KEYS, SUBSCORE_SCHEMA, build_battery, choice_of_scores,
                       parse_subscores, read_reply, summarize)
from lmad.studies.jury.battery import TIERS, shortfall
from lmad.schemas import read_table, write_table
from lmad.studies.jury.stages import jury, jury_table

OPTIONS = ["w", "x", "y", "z"]


def gpqa(i: int, dataset: str = "gpqa-diamond") -> dict:
    """A choice question whose text carries its key, so a rule responder can grade soundness."""
    key = "ABCD"[i % 4]
    return {"qid": f"g{i:02d}", "dataset": dataset, "benchmark": "gpqa-diamond", "answer_type": "choice",
            "question": f"Which option is right in question {i}? [key {key}]", "context": [], "answer": key,
            "aliases": [], "choices": OPTIONS, "supporting_facts": [], "choice_order": [], "survey": ""}


def opinion(i: int) -> dict:
    return {"qid": f"o{i}", "dataset": "globalopinionqa", "benchmark": "globalopinionqa", "answer_type": "opinion",
            "question": f"Do you agree with statement {i}?", "context": [], "answer": "", "aliases": [],
            "choices": ["Agree", "Disagree"], "supporting_facts": [], "choice_order": [],
            "survey": json.dumps({"X": [0.5, 0.5]})}


# ------------------------------------------------------------------ responders (rule-scoring jurors)

def _answers(req) -> tuple[str, str, str]:
    user = dict(req.messages)["user"]
    key = re.search(r"\[key ([A-D])\]", user)
    first = user.split("Answer 1:\n", 1)[1].split("\n\nAnswer 2:\n", 1)[0]
    second = user.split("\n\nAnswer 2:\n", 1)[1].split("\n\nScore each answer", 1)[0]
    return (key.group(1) if key else ""), first, second


def grade(text: str, key: str) -> list[int]:
    """The rule: coverage 5 with the rival weighed (else 2), steelmanning 4 with an alternative
    argued (else 1), commitment 1 when it declines to choose (else 5), soundness 5 when the answer
    it commits to is the key (else 1)."""
    said = re.search(r"answer is ([A-D])\b", text) or re.fullmatch(r"\s*([A-D])\s*", text)
    return [5 if "fair hearing" in text else 2, 4 if "One could argue" in text else 1,
            1 if "do not commit" in text else 5, 5 if said and said.group(1) == key else 1]


def scores_json(first: list[int], second: list[int]) -> str:
    return json.dumps({**{f"{d}_1": v for d, v in zip(DIMENSIONS, first)},
                       **{f"{d}_2": v for d, v in zip(DIMENSIONS, second)}})


def by_rule(req) -> str:
    key, first, second = _answers(req)
    return scores_json(grade(first, key), grade(second, key))


def position_biased(req) -> str:
    return scores_json([5, 5, 5, 5], [1, 1, 1, 1])  # the first answer always wins: never swap-consistent


def garbage(req) -> str:
    return "I prefer the first one, it is clearly better."


def half_garbage(req) -> str:
    return by_rule(req) if dict(req.messages)["user"].find("Answer 1:\nThe answer is") < 0 else "{\"coverage_1\": 9}"


# ------------------------------------------------------------------ running the stage and the table

def run_jury(tmp_path, questions, predictions, responder, juror="j", subscores=True, per_dataset=18,
             min_rate=0.8):
    qpath, ppath = tmp_path / "questions.parquet", tmp_path / "predictions.parquet"
    write_table("questions", questions, qpath)
    write_table("predictions", [{"dataset": d, "qid": q, "method": m, "prediction": p}
                                for (d, q, m), p in predictions.items()], ppath)
    verdicts = tmp_path / "results" / "scripted" / "disagreement" / f"jury_{juror}.parquet"
    verdicts.parent.mkdir(parents=True, exist_ok=True)
    battery = {"questions": per_dataset, "tiers": list(TIERS), "pass_tier": "severe"}
    prompt = "config/prompts/" + ("jury_subscores.txt" if subscores else "jury.txt")
    from conftest import REPO

    jury(questions=[str(qpath)], predictions=[str(ppath)], prompt=str(REPO / prompt), verdicts=str(verdicts),
         model={"name": juror, "backend": "scripted", "model": juror, "responder": f"test_jury_subscores:{responder}"},
         judge_name=juror, cache_dir=str(tmp_path / f"cache_{responder}"), pair=["sc", "mad"], battery=battery,
         subscores=subscores, max_tokens=128, seed=0, provenance={})
    csv, md = tmp_path / "jury.csv", tmp_path / "jury.md"
    jury_table([str(verdicts)], str(csv), str(md), ["sc", "mad"], min_rate, {}, battery, subscores)
    rows = read_table("jury_verdicts", verdicts).to_dicts()
    return rows, pl.read_csv(csv).to_dicts()[0], md.read_text()


def right_vs_wrong(questions):
    """``sc`` answers each question's key, ``mad`` the next letter (wrong)."""
    out = {}
    for q in questions:
        out[(q["dataset"], q["qid"], "sc")] = q["answer"]
        out[(q["dataset"], q["qid"], "mad")] = "ABCD"[("ABCD".index(q["answer"]) + 1) % 4]
    return out


def test_rule_juror_scores_verdicts_and_battery(tmp_path):
    qs = [gpqa(i) for i in range(20)]
    rows, table, md = run_jury(tmp_path, qs, right_vs_wrong(qs), "by_rule")
    battery = [r for r in rows if r["kind"] == "battery"]
    assert len(battery) == 2 * 54 and {t: sum(r["tier"] == t for r in battery) for t in TIERS} == {
        t: 36 for t in TIERS}
    pairs = [r for r in rows if r["kind"] == "pair"]
    # the right letter: (2, 1, 5, 5) = 13, the wrong one (2, 1, 5, 1) = 9, in either position
    assert all(r["a_scores"] == [2, 1, 5, 5] and r["b_scores"] == [2, 1, 5, 1] and r["winner"] == "a"
               for r in pairs)
    assert [r["choice"] for r in pairs if r["order"] == 1] == ["2"] * 20  # A shown second wins as "2"
    assert not any(r["parse_error"] for r in rows)
    assert table["status"] == "PASSED" and table["a_wins"] == 20 and table["ties"] == 0 and table["b_wins"] == 0
    assert table["consistency"] == 1.0 and table["fallbacks"] == 0 and table["replies"] == 2 * (20 + 54)
    for t in TIERS:
        assert table[f"battery_{t}"] == 18 and table[f"sensitivity_{t}"] == 1.0
    assert table["soundness_a"] == 5.0 and table["soundness_b"] == 1.0 and table["coverage_a"] == 2.0
    assert table["commitment_same_both_orders"] == 1.0 and table["scored_replies"] == 40
    assert "jury PASSED" in md and "per tier: severe 100.0 % of 18; moderate 100.0 % of 18; subtle 100.0 % of 18" in md
    assert "| scripted | 20 | 20 | 0 | 0 | 100.0 % | 100.0 % | 100.0 % | 100.0 % | 100.0 % | 0 / 148 |" in md
    assert "| scripted | soundness | 5.00 | 1.00 | 100.0 % |" in md and "Battery short" not in md


def test_position_bias_is_a_tie_and_fails(tmp_path):
    qs = [gpqa(i) for i in range(3)]
    rows, table, md = run_jury(tmp_path, qs, right_vs_wrong(qs), "position_biased")
    assert {r["winner"] for r in rows if r["order"] == 0} == {"a"} and {r["winner"] for r in rows if r["order"] == 1} == {"b"}
    s = summarize(rows, 0.8)
    assert s["ties"] == 3 and s["consistency"] == 0.0 and s["tier_sensitivity"] == {t: 0.0 for t in TIERS}
    assert table["status"] == "FAILED" and table["a_wins"] is None  # empty in the CSV: not shown
    assert "swap-consistency 0.0 %" in md and "| FAILED | FAILED | FAILED |" in md
    # its means are withheld, its (zero) order agreement is not: both score the first answer 5 and the second 1
    assert "| scripted | coverage | FAILED | FAILED | 0.0 % |" in md


def test_unparsable_replies_are_counted_fallbacks(tmp_path):
    qs = [gpqa(0)]  # n = 1 question: 1 pair, 3 battery pairs, a short battery said so
    rows, table, md = run_jury(tmp_path, qs, right_vs_wrong(qs), "garbage")
    assert len(rows) == 2 * 4 and all(r["parse_error"].startswith("invalid JSON") for r in rows)
    assert all(r["winner"] == "" and r["a_scores"] is None for r in rows)
    assert table["status"] == "FAILED" and table["fallbacks"] == table["replies"] == 8
    assert "Fallbacks (unparsable replies, ties) of 8 replies: `j` 8" in md
    assert "Battery short: `gpqa-diamond` gave 3 of the 54 battery pairs wanted (1 of 18 questions" in md
    assert "| scripted | coverage | FAILED | FAILED | – |" in md


def test_some_fallbacks_leave_the_rest_scored(tmp_path):
    qs = [gpqa(i) for i in range(4)]
    rows, table, _ = run_jury(tmp_path, qs, right_vs_wrong(qs), "half_garbage", per_dataset=4)
    bad = [r for r in rows if r["parse_error"]]
    assert bad and all("exactly the keys" in r["parse_error"] for r in bad)
    assert table["fallbacks"] == len(bad) < table["replies"]
    # a battery text opening "The answer is" in Answer 1 makes the reply fall back: every battery pair has a
    # fallback order, so it is a tie and the jury fails; the real pairs (bare letters) were all scored
    assert table["status"] == "FAILED" and table["scored_replies"] == 8


def test_method_absent_gives_no_question_pair(tmp_path):
    qs = [gpqa(i) for i in range(2)]
    only_sc = {k: v for k, v in right_vs_wrong(qs).items() if k[2] == "sc"}
    rows, table, md = run_jury(tmp_path, qs, only_sc, "by_rule", per_dataset=2)
    assert not [r for r in rows if r["kind"] == "pair"] and table["pairs"] == 0
    assert table["status"] == "PASSED" and table["a_wins"] == 0 and table["scored_replies"] == 0
    assert "| scripted | 0 | 0 | 0 | 0 |" in md


def test_gold_less_run_is_unvalidated(tmp_path):
    qs = [opinion(i) for i in range(3)]
    preds = {(q["dataset"], q["qid"], m): "A" for q in qs for m in ("sc", "mad")}
    rows, table, md = run_jury(tmp_path, qs, preds, "by_rule")
    assert not [r for r in rows if r["kind"] == "battery"]
    assert table["status"] == "UNVALIDATED" and table["a_wins"] is None
    assert "jury UNVALIDATED" in md and "`globalopinionqa` (3 pairs)" in md and "unvalidated there" in md
    assert "| scripted | coverage | UNVALIDATED | UNVALIDATED |" in md


def test_choice_mode_still_runs(tmp_path):
    qs = [gpqa(i) for i in range(2)]
    rows, table, md = run_jury(tmp_path, qs, right_vs_wrong(qs), "choice_first", subscores=False, per_dataset=2)
    assert all(r["a_scores"] is None for r in rows) and {r["choice"] for r in rows} == {"1"}
    assert table["status"] == "FAILED" and table["consistency"] == 0.0 and "Sub-scores" not in md


def choice_first(req) -> str:
    assert req.constraint == {"choice": ["1", "2", "tie"]}
    return "1"


# ------------------------------------------------------------------ parsing and the derivation

def test_request_is_constrained_to_the_subscore_schema():
    assert SUBSCORE_SCHEMA["required"] == list(SUBSCORE_KEYS) and len(SUBSCORE_KEYS) == 8
    assert all(v == {"enum": [1, 2, 3, 4, 5]} for v in SUBSCORE_SCHEMA["properties"].values())
    from lmad.backends.scripted import instance_of

    assert parse_subscores(json.dumps(instance_of(SUBSCORE_SCHEMA, 3)))[0] is not None  # what the double sends


def test_derivation_and_swap():
    assert choice_of_scores([5, 5, 5, 5], [4, 5, 5, 5]) == "1" and choice_of_scores([1, 1, 1, 1], [1, 1, 1, 2]) == "2"
    assert choice_of_scores([2, 3, 4, 5], [5, 4, 3, 2]) == "tie"  # equal sums
    # order 1 shows B first: its first scores are B's
    r = read_reply(scores_json([1, 1, 1, 1], [3, 3, 3, 3]), 1, True)
    assert r["choice"] == "2" and r["winner"] == "a" and r["a_scores"] == [3, 3, 3, 3] and r["b_scores"] == [1] * 4
    assert read_reply("2", 0, False)["winner"] == "b" and read_reply("?", 0, False)["parse_error"]


@pytest.mark.parametrize("reply", ["", "{}", "null", "[1, 2]", scores_json([1, 2, 3, 6], [1, 1, 1, 1]),
                                   scores_json([0, 2, 3, 4], [1, 1, 1, 1]),
                                   json.dumps({k: True for k in SUBSCORE_KEYS}),
                                   json.dumps({**{k: 3 for k in SUBSCORE_KEYS}, "extra": 3}),
                                   json.dumps({k: 3.0 for k in SUBSCORE_KEYS}), "[" * 5000, "1" * 5000])
def test_out_of_range_or_malformed_is_a_fallback(reply):
    scores, reason = parse_subscores(reply)
    assert scores is None and reason
    assert read_reply(reply, 0, True)["winner"] == ""


@given(st.text(max_size=200))
def test_parser_never_raises_on_any_text(text):
    scores, reason = parse_subscores(text)
    assert (scores is None) == bool(reason)
    if scores is not None:
        assert all(v in range(1, 6) for side in scores for v in side)


@given(st.dictionaries(st.sampled_from([*SUBSCORE_KEYS, "coverage", "x"]),
                       st.one_of(st.integers(-2, 8), st.booleans(), st.floats(allow_nan=False), st.text(max_size=3)),
                       max_size=10))
def test_parser_accepts_exactly_the_eight_keys_in_range(obj):
    scores, _ = parse_subscores(json.dumps(obj))
    valid = set(obj) == set(SUBSCORE_KEYS) and all(
        isinstance(v, int) and not isinstance(v, bool) and 1 <= v <= 5 for v in obj.values())
    assert (scores is not None) == valid


# ------------------------------------------------------------------ the battery

def test_battery_is_54_pairs_in_three_tiers_when_gold_suffices():
    qs = [gpqa(i) for i in range(30)]
    items = build_battery(qs, 18, seed=0)
    assert len(items) == 54 and {t: sum(it["tier"] == t for it in items) for t in TIERS} == {t: 18 for t in TIERS}
    assert len({it["qid"] for it in items}) == 18 and not shortfall(items, ["gpqa-diamond"], 18, TIERS)
    assert items == build_battery(list(reversed(qs)), 18, seed=0)  # seeded, order-free
    assert items != build_battery(qs, 18, seed=1)
    for it in items:
        assert it["a"] != it["b"] and it["known"] != it["rival"]
        if it["tier"] == "severe":
            assert it["b"].startswith(f"The answer is {it['rival']} (")
        elif it["tier"] == "moderate":
            assert "do not commit" in it["b"] and it["known"] in it["b"]
        else:
            assert it["b"] == f"The answer is {it['known']} ({OPTIONS['ABCD'.index(it['known'])]})."


def test_battery_short_of_gold_says_so():
    qs = [gpqa(i) for i in range(5)] + [opinion(i) for i in range(4)]
    items = build_battery(qs, 18, seed=0)
    assert len(items) == 15 and {it["dataset"] for it in items} == {"gpqa-diamond"}
    note = shortfall(items, {"gpqa-diamond"}, 18, TIERS)
    assert note == ["`gpqa-diamond` gave 15 of the 54 battery pairs wanted (5 of 18 questions had a known answer "
                    "and a known-wrong rival)"]
    assert len(build_battery(qs, 18, seed=0, tiers=["severe"])) == 5


def test_pass_tier_needs_its_tiers():
    from lmad.config_checks import check_config

    with pytest.raises(ValueError, match="pass_tier 'moderate' needs the tiers"):
        check_config({"methods": [], "backbones": [], "models": {"m": {"backend": "scripted", "model": "m"}},
                      "judge": {"model": "m"}, "datasets": {},
                      "jury": {"battery": {"tiers": ["moderate"], "pass_tier": "moderate"}}}, True)
