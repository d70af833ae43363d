"""The judge's known-answer validation and the honest headline (docs/analysis.md "Judge validation")."""
import math
import re

import polars as pl
import pytest
from hypothesis import given, strategies as st

from conftest import REPO, make_config, scripted_model, snakemake, write_config
from lmad.answers.official import score
from lmad.data.loaders import load_jsonl
from lmad.headline import headline
from lmad.judge_battery import build_battery, cohen_kappa, summarize

KINDS = ["gold", "alias", "variant_case", "variant_punct", "in_sentence", "other_gold", "opposite_yes_no", "near_miss"]


@pytest.fixture(scope="module")
def demo_questions():
    """Every demo question of the multi-hop benchmarks (their original schemas, 4 each)."""
    out = []
    for d in ("hotpotqa", "2wikimultihopqa", "musique", "strategyqa"):
        out += load_jsonl(REPO / "data" / "demo" / f"{d}.jsonl", d)
    return out


def test_battery_on_the_demo_questions_is_seeded_and_its_negatives_are_wrong(demo_questions):
    items = build_battery(demo_questions, 4, KINDS, 2, seed=0)
    assert items == build_battery(demo_questions, 4, KINDS, 2, seed=0)
    assert items != build_battery(demo_questions, 4, KINDS, 2, seed=1)
    assert {it.kind for it in items} == set(KINDS)
    per_dataset = {}
    for it in items:
        per_dataset.setdefault(it.dataset, set()).add(it.qid)
    assert len(per_dataset) == 4 and all(len(q) == 4 for q in per_dataset.values())
    golds = {(q["dataset"], q["qid"]): [q["answer"], *q["aliases"]] for q in demo_questions}
    for it in items:
        em, f1 = score(it.candidate, golds[(it.dataset, it.qid)], "hotpotqa")
        if it.expected:
            assert em == 1.0 or it.kind == "in_sentence", it
        else:
            assert em == 0.0 and f1 == 0.0, it  # a known-incorrect item shares no token with the gold


def _rows(pos, neg):
    return [{"expected": True, "judge_verdict": v} for v in pos] + [{"expected": False, "judge_verdict": v} for v in neg]


def test_always_correct_judge_fails_on_its_known_incorrect_side():
    s = summarize(_rows(["correct"] * 30, ["correct"] * 10), 0.8)
    assert s["tpr"] == 1.0 and s["tnr"] == 0.0 and not s["passed"]
    assert "known-incorrect 0.0 %" in s["reason"]


def test_perfect_judge_passes_and_unscored_is_a_miss():
    assert summarize(_rows(["correct"] * 5, ["incorrect"] * 5), 0.8)["passed"]
    s = summarize(_rows(["correct"] * 4 + ["unscored"], ["incorrect"] * 5), 0.9)
    assert s["tpr"] == 0.8 and not s["passed"] and s["n_unscored"] == 1


def test_a_judge_that_never_answers_in_form_is_named():
    s = summarize(_rows(["unscored"] * 3, ["unscored"] * 2), 0.8)
    assert s["unscored_rate"] == 1.0 and "never answered in the allowed form" in s["reason"]


@given(pos=st.lists(st.sampled_from(["correct", "incorrect", "unscored"]), max_size=30),
       neg=st.lists(st.sampled_from(["correct", "incorrect", "unscored"]), max_size=30),
       floor=st.floats(0, 1))
def test_two_sided_floor(pos, neg, floor):
    s = summarize(_rows(pos, neg), floor)
    if s["passed"]:
        assert pos and neg and s["tpr"] >= floor and s["tnr"] >= floor
    if neg and all(v == "correct" for v in neg) and floor > 0:
        assert not s["passed"]  # an always-"correct" judge can never pass, whatever the skew
    for k in ("tpr", "tnr", "balanced_acc", "unscored_rate"):
        assert math.isnan(s[k]) or 0.0 <= s[k] <= 1.0


def test_kappa():
    assert cohen_kappa([1, 0, 1, 0], [1, 0, 1, 0]) == 1.0
    assert cohen_kappa([1, 1, 0, 0], [1, 0, 1, 0]) == 0.0
    assert math.isnan(cohen_kappa([1, 1], [1, 1]))
    assert math.isnan(cohen_kappa([], []))


def _validation(passed):
    return {"judge_model": "j", "n_correct_items": 10, "n_incorrect_items": 10, "tpr": 1.0,
            "tnr": 1.0 if passed else 0.0, "balanced_acc": 1.0 if passed else 0.5, "n_unscored": 0,
            "unscored_rate": 0.0, "min_recall": 0.8, "passed": passed, "reason": "r"}


@pytest.mark.parametrize("setting, passed, metric, warned", [
    ("auto", True, "judge", False), ("auto", False, "em", True), ("judge", False, "judge", True),
    ("f1", True, "f1", False), ("em", False, "em", True)])
def test_headline(setting, passed, metric, warned):
    h = headline(setting, _validation(passed))
    assert h.metric == metric and bool(h.warning) is warned
    assert ("FAILED" if not passed else "PASSED") in h.validation


# ---- the workflow: a scripted judge of each kind, switched without rerunning generation ----

@pytest.fixture(scope="module")
def judged_run(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("judged")
    models = {"scripted": scripted_model(), "judge": {**scripted_model("judge"), "judge_mode": "always_correct"}}
    config = make_config(workdir, n=1, models=models, methods=("cot", "sc"))
    config["judge"]["model"] = "judge"
    write_config(workdir, config)
    snakemake(workdir, "paper", "all")
    return workdir, config


def _switch_judge(workdir, config, mode):
    """Switch the scripted judge's behaviour; returns the rules the rerun planned."""
    config["models"]["judge"]["judge_mode"] = mode
    write_config(workdir, config)
    plan = snakemake(workdir, "paper", "all", "--dry-run")
    snakemake(workdir, "paper", "all")
    return set(re.findall(r"^(?:local)?rule (\w+):", plan.stdout, flags=re.MULTILINE))


def test_always_correct_judge_fails_and_outputs_fall_back_to_em(judged_run):
    workdir, _ = judged_run
    v = pl.read_parquet(workdir / "results/judge/judge/validation.parquet").row(0, named=True)
    assert v["tnr"] == 0.0 and v["tpr"] == 1.0 and not v["passed"]
    table = (workdir / "results/scripted/analysis/table.md").read_text()
    assert table.startswith("# EM (%)") and "FAILED validation" in table.split("|")[0]
    table1 = (workdir / "results/paper/table1.md").read_text()
    assert "FAILED validation" in table1.split("|")[0] and "Exact match (official EM) (%)" in table1
    assert pl.read_csv(workdir / "results/paper/table1.csv")["metric"].unique().to_list() == ["em"]
    assert "FAILED" in (workdir / "results/paper/viewer/scripted.html").read_text()
    from PIL import Image
    for fig in ("results/paper/accuracy.png", "results/paper/pareto.png", "results/scripted/analysis/accuracy.png"):
        assert "exact match" in Image.open(workdir / fig).info["Title"], fig


def test_switching_to_a_perfect_judge_reruns_only_judging_and_keeps_judge_accuracy(judged_run):
    workdir, config = judged_run
    samples = {p: p.stat().st_mtime_ns for p in (workdir / "results/scripted").rglob("samples/*.parquet")}
    ran = _switch_judge(workdir, config, "oracle")
    assert "generate" not in ran and {"judge", "judge_validation"} <= ran
    assert samples == {p: p.stat().st_mtime_ns for p in samples}
    v = pl.read_parquet(workdir / "results/judge/judge/validation.parquet").row(0, named=True)
    assert v["passed"] and v["tpr"] == 1.0 and v["tnr"] == 1.0
    table = (workdir / "results/scripted/analysis/table.md").read_text()
    assert table.startswith("# Judge acc. (%)") and "validation PASSED" in table and "FAILED" not in table
    assert pl.read_csv(workdir / "results/paper/table1.csv")["metric"].unique().to_list() == ["judge"]
    from PIL import Image
    assert "judge accuracy" in Image.open(workdir / "results/paper/accuracy.png").info["Title"]


def test_a_judge_that_never_answers_in_form_is_all_unscored(judged_run):
    workdir, config = judged_run
    _switch_judge(workdir, config, "garbage")
    v = pl.read_parquet(workdir / "results/judge/judge/validation.parquet").row(0, named=True)
    assert v["unscored_rate"] == 1.0 and not v["passed"]
    assert "never answered in the allowed form" in (workdir / "results/judge/judge/validation.md").read_text()
    acc = pl.read_parquet(workdir / "results/scripted/analysis/accuracy.parquet")
    # unscored replies are incorrect decisions, counted beside the accuracy
    assert acc["judge_acc"].to_list() == [0.0] * len(acc) and (acc["n_unscored"] == acc["n"]).all()
