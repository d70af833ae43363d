"""The opinion distribution table (lmad/studies/opinion/rules.smk, lmad.studies.opinion.stages) on the demo GlobalOpinionQA
file with the scripted backend (tests/opinion_oracle.py): its numbers equal a hand computation with
scipy's Jensen–Shannon distance, and replies that never name an option give 0 valid questions."""
import ast
import csv
from statistics import fmean

import polars as pl
import pytest
from scipy.spatial.distance import jensenshannon

from conftest import REPO, make_config, scripted_model, snakemake
from lmad.studies.opinion.stages import final_answers

DEMO = REPO / "data" / "demo" / "globalopinionqa.csv"
TABLE = "results/oracle/analysis/opinion.parquet"
ENV = {"PYTHONPATH": f"{REPO / 'tests'}:{REPO / 'workflow'}"}


def surveys() -> list[dict[str, list[float]]]:
    """Each demo question's survey, read straight from the CSV."""
    with DEMO.open(newline="") as f:
        return [ast.literal_eval(row["selections"].removeprefix("defaultdict(<class 'list'>, ").removesuffix(")"))
                for row in csv.DictReader(f)]


def expected(letters: list[str]) -> dict:
    """The table's row for a method whose every question got ``letters``, by hand: the letters'
    shares over each question's options vs each country's survey, 1 − JS distance (base 2)."""
    pairs, by_country, valid = [], {}, 0
    for survey in surveys():
        n_options = len(next(iter(survey.values())))
        counts = [sum(a == "ABCD"[i] for a in letters) for i in range(n_options)]
        if not sum(counts):
            continue
        valid += 1
        for country, dist in survey.items():
            pairs.append(1 - jensenshannon(counts, dist, base=2))
            by_country.setdefault(country, []).append(pairs[-1])
    means = {c: fmean(v) for c, v in by_country.items()}
    best, worst = max(means, key=means.get), min(means, key=means.get)
    return {"n": 4, "n_valid": valid, "n_countries": len(means), "similarity": fmean(pairs), "best_country": best,
            "best_similarity": means[best], "worst_country": worst, "worst_similarity": means[worst]}


def run(workdir, responder: str, methods=("cot", "sc", "mad")):
    datasets = {"globalopinionqa": {"source": "local", "path": str(DEMO), "n": None}}
    make_config(workdir, models={"oracle": {**scripted_model(), "responder": f"opinion_oracle:{responder}"}},
                backbones=["oracle"], methods=methods, datasets=datasets, debate={"rounds": 1},
                lmad={"iterations": 2, "local_rounds": 1})
    snakemake(workdir, TABLE, env=ENV)
    return {r["method"]: r for r in pl.read_parquet(workdir / TABLE).to_dicts()}


def test_the_table_equals_a_hand_computation(tmp_path):
    rows = run(tmp_path, "respond")
    # sc: the three proposals (A, B, A); mad: its final round, where every revision says C (no option
    # of the two two-option questions); cot: its one prediction, B
    want = {"sc": ("agents", ["A", "B", "A"]), "mad": ("agents", ["C", "C", "C"]), "cot": ("prediction", ["B"])}
    assert set(rows) == set(want)
    for method, (source, letters) in want.items():
        row = rows[method]
        assert row["source"] == source and row["backbone"] == "oracle" and row["dataset"] == "globalopinionqa"
        for key, value in expected(letters).items():
            assert row[key] == pytest.approx(value), (method, key)
    assert rows["mad"]["n_valid"] == 2 and rows["sc"]["n_valid"] == 4
    md = (tmp_path / "results/oracle/analysis/opinion.md").read_text()
    assert "GlobalOpinionQA" in md and "no accuracy" in md and f"{rows['sc']['best_country']} (" in md


def test_truemad_and_lmad_run_on_opinion_questions_and_get_a_row(tmp_path):
    rows = run(tmp_path, "respond", methods=("cot", "sc", "mad", "truemad", "lmad"))
    assert set(rows) == {"cot", "sc", "mad", "truemad", "lmad"}
    for method in ("truemad", "lmad"):   # several agents: their last round's letters
        assert rows[method]["source"] == "agents" and rows[method]["n"] == 4, rows[method]
        assert 0 <= rows[method]["n_valid"] <= 4


def test_the_table_is_a_target_of_the_run_only_with_an_opinion_dataset(tmp_path):
    datasets = {"globalopinionqa": {"source": "local", "path": str(DEMO), "n": None}}
    make_config(tmp_path, backbones=["scripted"], methods=("cot", "sc"), datasets=datasets)
    out = snakemake(tmp_path, "--dry-run", env=ENV).stdout
    assert "rule opinion_table:" in out and "results/scripted/analysis/opinion.md" in out
    make_config(tmp_path, backbones=["scripted"], methods=("cot", "sc"))   # the multi-hop demo sets
    assert "opinion_table" not in snakemake(tmp_path, "--dry-run", env=ENV).stdout


def test_unparsable_replies_give_no_valid_question(tmp_path):
    rows = run(tmp_path, "unparsable")
    for row in rows.values():
        assert (row["n"], row["n_valid"], row["n_countries"]) == (4, 0, 0)
        assert row["similarity"] is None and row["best_country"] is None and row["worst_country"] is None
    assert "| – | – | – |" in (tmp_path / "results/oracle/analysis/opinion.md").read_text()


def test_a_question_that_stopped_early_keeps_its_stop_round():
    rounds = [[{"qid": "q1", "agent": 1, "answer": "B"}, {"qid": "q1", "agent": 0, "answer": "A"},
               {"qid": "q2", "agent": 0, "answer": "A"}],
              [{"qid": "q2", "agent": 0, "answer": "C"}]]
    assert final_answers(rounds) == {"q1": ["A", "B"], "q2": ["C"]}
