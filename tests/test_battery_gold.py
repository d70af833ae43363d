"""Known-answer batteries on a task without gold: no battery item ever holds up an empty gold as the
known-better (known-correct, endorsed) answer, and the outputs say where an instrument cannot be
validated (docs/studies.md "Pairwise jury", "Disagreement layers")."""
import json

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from lmad.answers import gold_of
from lmad.studies.disagreement.pushback import OPINION_PARENT, battery_note, build_battery as pushback_battery
from lmad.judge_battery import build_battery as judge_battery, known_answer
from lmad.studies.jury.verdicts import build_battery as jury_battery, summarize, winner
from lmad.studies.process.metrics import build_rubric_battery
from lmad.schemas import write_table
from lmad.studies.jury.stages import jury_table

KINDS = ["gold", "alias", "variant_case", "variant_punct", "in_sentence", "other_gold", "opposite_yes_no", "near_miss"]
OPTIONS = ["Strongly agree", "Agree", "Disagree", "Strongly disagree"]
CONTEXT = [{"title": "Alpha", "sentences": ["Alpha is a city."]}, {"title": "Beta", "sentences": ["Beta is a town."]}]


def opinion(i: int, dataset: str = "globalopinionqa") -> dict:
    """A GlobalOpinionQA row as prepare_data writes it: answer type opinion, empty gold."""
    return {"qid": f"o{i}", "dataset": dataset, "benchmark": "globalopinionqa", "answer_type": "opinion",
            "question": f"Do you agree with statement {i}?", "context": [], "answer": "", "aliases": [],
            "choices": OPTIONS, "supporting_facts": [], "survey": json.dumps({"X": [0.1, 0.4, 0.4, 0.1]})}


def gpqa(i: int) -> dict:
    return {"qid": f"g{i}", "dataset": "gpqa-diamond", "benchmark": "gpqa-diamond", "answer_type": "choice",
            "question": f"Which option is right in question {i}?", "context": [], "answer": "ABCD"[i % 4],
            "aliases": [], "choices": ["w", "x", "y", "z"], "supporting_facts": []}


def row(i: int, answer_type: str, answer: str, aliases=(), dataset: str = "") -> dict:
    """A question row of any answer type; ``answer`` may be empty (no gold, or a broken row)."""
    return {"qid": f"q{i}", "dataset": dataset or f"d_{answer_type}", "benchmark": "hotpotqa",
            "answer_type": answer_type, "question": f"Question {i}?", "answer": answer, "aliases": list(aliases),
            "context": CONTEXT if answer_type in ("span", "yes_no") else [],
            "choices": OPTIONS if answer_type in ("choice", "opinion") else [],
            "supporting_facts": [{"title": "Alpha", "sent_id": 0, "paragraph": 0}] if answer_type == "span" else []}


def known_golds(q: dict) -> set[str]:
    return {g for g in gold_of(q).answers if g.strip()}


# ------------------------------------------------------------------- opinion rows: no known-better answer

def test_no_battery_prefers_an_empty_opinion_gold():
    rows = [opinion(i) for i in range(6)]
    assert all(known_answer(q) is None for q in rows)
    assert jury_battery(rows, 10, seed=0) == []
    assert judge_battery(rows, 10, KINDS, 2, seed=0) == []
    assert build_rubric_battery(rows, 10, seed=0) == []
    items = pushback_battery(rows, 10, seed=0)
    # layer B's battery stands on the question's own options (a stance known by construction), never
    # on an empty gold: every parent states a non-empty option, every endorsement accepts it
    assert len(items) == 4 * len(rows)
    for it in items:
        assert it.parent.startswith(OPINION_PARENT.split("{")[0]) and "option " in it.parent
        position = it.parent.split("my position is ", 1)[1].split(".\n")[0]
        assert position.strip() and position in it.reply
        letter = it.parent.rsplit("Answer: ", 1)[1]
        said = it.reply.rsplit("Answer: ", 1)[1]
        assert letter in "ABCD" and said in "ABCD" and (said == letter) == (it.kind == "endorsement")


def test_an_empty_gold_of_any_type_builds_no_item():
    """The same row with its gold emptied (a broken or gold-less row typed as span or choice) gives
    no item at all; before, the empty string stood as the known-better answer."""
    rows = [row(0, "choice", ""), row(1, "span", ""), row(2, "span", "Alpha", dataset="d_choice"),
            row(3, "choice", "B"), row(4, "span", "", aliases=["Gamma"])]
    for it in jury_battery(rows, 10, seed=0):
        assert it["known"].strip() and it["known"] in it["a"] and it["qid"] not in ("q0", "q1")
    assert not [it for it in pushback_battery(rows, 10, seed=0) if it.qid in ("q0", "q1")]
    assert all(it.candidate.strip(" .") and it.candidate != "The answer is ." for it in judge_battery(rows, 10, KINDS, 2, 0)
               if it.expected)
    # an alias is a known answer when the answer field is empty
    assert known_answer(rows[4]) == "Gamma"


def rich(dataset, prefix, n):
    """Span questions with passages, so the rubric battery has something to quote."""
    return [row(i, "span", ["Alpha", "Beta"][i % 2], dataset=dataset) | {"qid": f"{prefix}{i}"} for i in range(n)]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["span", "yes_no", "choice", "numeric", "opinion"]),
                          st.sampled_from(["", " ", "Alpha", "Beta", "yes", "no", "B", "C", "42", "7"]),
                          st.lists(st.sampled_from(["", "Alpha", "Gamma"]), max_size=2),
                          st.sampled_from(["d1", "d2"])), min_size=1, max_size=12),
       st.integers(0, 3))
def test_no_battery_item_has_an_empty_known_better_side(spec, seed):
    """Over random rows mixing empty and non-empty golds of every answer type: every known-better
    side (the jury's ``a``, layer B's endorsed position, the judge's and the rubric's known-correct
    candidate) is a non-empty known answer of its question, and never a gold-less question's."""
    rows = []
    for i, (kind, answer, aliases, dataset) in enumerate(spec):
        if kind == "opinion":
            answer, aliases = "", []
        if kind == "yes_no" and answer.strip() not in ("yes", "no"):
            answer = "yes" if i % 2 else ""
        rows.append(row(i, kind, answer, aliases, dataset=dataset))
    by_id = {(q["dataset"], q["qid"]): q for q in rows}
    for it in jury_battery(rows, 20, seed):
        q = by_id[(it["dataset"], it["qid"])]
        assert it["known"].strip() and it["known"] in known_golds(q) and q["answer_type"] != "opinion"
        assert it["a"].startswith(f"The answer is {it['known']}") and it["tier"] in ("severe", "moderate", "subtle")
        assert not gold_of(q).correct(it["rival"]) or q["answer_type"] == "span"
    for it in pushback_battery(rows, 20, seed):
        q = by_id[(it.dataset, it.qid)]
        stated = it.parent.rsplit("Answer: ", 1)[1]
        assert stated.strip()
        if q["answer_type"] != "opinion":
            assert stated in known_golds(q)
    for it in judge_battery(rows, 20, KINDS, 2, seed):
        q = by_id[(it.dataset, it.qid)]
        assert q["answer_type"] != "opinion" and known_golds(q)
        if it.expected:
            assert it.candidate.strip(" .") and it.candidate != "The answer is ."
    for it in build_rubric_battery(rows + rich("d3", "r", 3), 20, seed):
        assert "Answer: \n" not in it.parent + it.own + it.reply and not it.parent.rstrip().endswith("Answer:")


# -------------------------------------------------------------------------- the outputs say so

def verdict_rows(items, juror="j"):
    """A juror that always picks the answer shown as ``a`` (the known-better one on the battery)."""
    return [{"kind": it["kind"], "dataset": it["dataset"], "qid": it["qid"], "tier": it.get("tier", ""),
             "order": order, "judge_model": juror,
             "a": it["a"], "b": it["b"], "raw": c, "choice": c, "winner": winner(c, order)}
            for it in items for order, c in ((0, "1"), (1, "2"))]


def pairs(questions):
    return [{"kind": "pair", "dataset": q["dataset"], "qid": q["qid"], "a": "A", "b": "B"} for q in questions]


def test_jury_on_opinion_only_is_unvalidated_and_shows_no_verdict(tmp_path):
    qs = [opinion(i) for i in range(5)]
    items = pairs(qs) + [{"kind": "battery", **b} for b in jury_battery(qs, 10, 0)]
    s = summarize(verdict_rows(items), 0.8)
    assert s["battery"] == 0 and not s["passed"] and s["unvalidated"] == {"globalopinionqa": 5}
    assert "cannot be validated" in s["reason"] and "GlobalOpinionQA" in s["reason"]
    assert s["a_wins"] == s["ties"] == s["b_wins"] == 0 and s["pairs"] == 5
    path = tmp_path / "results" / "scripted" / "disagreement" / "jury_j.parquet"
    path.parent.mkdir(parents=True)
    write_table("jury_verdicts", verdict_rows(items), path, {})
    csv, md = tmp_path / "jury.csv", tmp_path / "jury.md"
    jury_table([str(path)], str(csv), str(md), ["sc", "mad"], 0.8, {})
    text = md.read_text()
    assert "jury UNVALIDATED" in text and "`globalopinionqa` (5 pairs)" in text and "unvalidated there" in text
    table = pl.read_csv(csv).to_dicts()[0]
    assert table["status"] == "UNVALIDATED" and table["a_wins"] is None and table["unvalidated_pairs"] == 5


def test_mixed_run_counts_only_the_datasets_the_battery_covers(tmp_path):
    """config/opinion.yaml's shape: GlobalOpinionQA beside GPQA. The jury is validated on GPQA's
    letters; GlobalOpinionQA's pairs are named, not counted."""
    qs = [opinion(i) for i in range(4)] + [gpqa(i) for i in range(3)]
    battery = jury_battery(qs, 10, 0)
    assert {b["dataset"] for b in battery} == {"gpqa-diamond"} and all(b["known"] in "ABCD" for b in battery)
    assert len(battery) == 3 * 3 and all(b["a"].startswith(f"The answer is {b['known']} (") for b in battery)
    items = pairs(qs) + [{"kind": "battery", **b} for b in battery]
    s = summarize(verdict_rows(items), 0.8)
    assert s["passed"] and s["validated"] == ["gpqa-diamond"] and s["unvalidated"] == {"globalopinionqa": 4}
    assert s["a_wins"] == 3 and s["a_wins"] + s["ties"] + s["b_wins"] + 4 == s["pairs"] == 7
    path = tmp_path / "results" / "scripted" / "disagreement" / "jury_j.parquet"
    path.parent.mkdir(parents=True)
    write_table("jury_verdicts", verdict_rows(items), path, {})
    md = tmp_path / "jury.md"
    jury_table([str(path)], str(tmp_path / "jury.csv"), str(md), ["sc", "mad"], 0.8, {})
    text = md.read_text()
    assert "jury PASSED" in text and "(`gpqa-diamond`)" in text
    assert "Not counted — `globalopinionqa` (4 pairs)" in text and "| 7 | 3 | 0 | 0 |" in text


def test_pushback_report_says_what_the_battery_stands_on_without_gold():
    qs = [opinion(i) for i in range(3)] + [gpqa(0)] + [opinion(9, dataset="bare") | {"choices": ["Only"]}]
    items = pushback_battery(qs, 10, 0)
    note = " ".join(battery_note(items, qs))
    assert "`globalopinionqa` (no gold answer)" in note and "stance" in note and "not any judgement" in note
    assert "`bare`: no gold and fewer than two options" in note and "unvalidated there" in note
    assert "gpqa-diamond" not in note
    assert battery_note(pushback_battery([gpqa(0)], 10, 0), [gpqa(0)]) == []
