"""When Debate Helps' Table 1 (rule paper_wdh, results/paper/wdh/table1.{csv,md}): vote20's predictions
and each debate's round-3 state, one column per configured dataset and their unweighted Avg., on the
held-out questions when the run has a society split (lmad.paper.wdh)."""
import os
import re
import subprocess
import sys

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as scipy_stats

from conftest import REPO, make_config, snakemake
from lmad import layout
from lmad.answers import Gold
from lmad.paper import wdh
from lmad.schemas import write_table
from lmad.stages.paper_wdh import wdh_table1

BB = "bb"


def question(dataset, qid, answer, answer_type="math"):
    return {"qid": qid, "dataset": dataset, "benchmark": dataset, "question": "?", "context": [], "answer": answer,
            "aliases": [], "qtype": "", "supporting_facts": [], "source": "t", "answer_type": answer_type,
            "choices": [], "choice_order": [], "survey": ""}


def sample(qid, t, agent, answer):
    return {"qid": qid, "stage": "debate", "round": t, "agent": agent, "temperature": 0.0, "seed": 0,
            "response": answer, "answer": answer, "answer_norm": answer, "answer_method": "answer_line",
            "prompt_tokens": 1, "completion_tokens": 1, "finish_reason": "stop", "cached": False}


def state(qid, t, stopped=None):
    """A question open after round t, or stopped earlier with answer ``stopped``."""
    if stopped is None:
        return {"qid": qid, "round": t, "active": True, "stop_reason": None, "stop_round": None, "prediction": None,
                "prediction_norm": None}
    return {"qid": qid, "round": t, "active": False, "stop_reason": "consensus", "stop_round": 1,
            "prediction": stopped, "prediction_norm": stopped}


def prediction(dataset, qid, answer, method="sc"):
    return {"qid": qid, "dataset": dataset, "method": method, "prediction": answer, "prediction_norm": answer,
            "stop_reason": "vote", "stop_round": 0, "calls": 1, "prompt_tokens": 1, "completion_tokens": 1}


class Run:
    """A hand-built results tree: questions, vote20 predictions, debate rounds and states, a split."""

    def __init__(self, root):
        self.root = root
        self.questions, self.predictions, self.splits = [], [], []

    def path(self, rel):
        p = self.root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        return p

    def add_questions(self, dataset, golds, answer_type="math"):
        p = self.path(layout.questions(dataset))
        write_table("questions", [question(dataset, q, a, answer_type) for q, a in golds.items()], p)
        self.questions.append(str(p))

    def add_vote(self, dataset, answers, backbone=BB):
        p = self.path(layout.predictions(backbone, dataset, "sc"))
        write_table("predictions", [prediction(dataset, q, a) for q, a in answers.items()], p)
        self.predictions.append(str(p))

    def add_round(self, dataset, method, t, answers, stopped=None, backbone=BB):
        """Round t: ``answers[qid]`` the agents' answers of the open questions; ``stopped`` {qid: answer}."""
        stopped = stopped or {}
        write_table("samples", [sample(q, t, i, a) for q, said in answers.items() for i, a in enumerate(said)],
                    self.path(layout.debate_round(backbone, dataset, method, t)))
        write_table("debate_state", [state(q, t) for q in answers] + [state(q, t, a) for q, a in stopped.items()],
                    self.path(layout.debate_round(backbone, dataset, method, t, "_state")))

    def add_split(self, rows, backbone=BB):
        p = self.path(layout.society(backbone, "split"))
        write_table("society_split", [{"benchmark": d, "dataset": d, "qid": q, "rank": i, "split": s}
                                      for i, (d, q, s) in enumerate(rows)], p)
        self.splits.append(str(p))

    def table(self, datasets, methods, held_out_size=None, backbones=(BB,)):
        rounds = [str(self.root / p) for p in wdh.round_inputs(backbones, datasets, methods)]
        states = [str(self.root / p) for p in wdh.round_inputs(backbones, datasets, methods, "_state")]
        csv, md = self.root / "t.csv", self.root / "t.md"
        wdh_table1(self.questions, [p for p in self.predictions if layout.parse(p).dataset in datasets], rounds, states,
                   str(csv), str(md), list(backbones), list(datasets), {d: d for d in datasets}, list(methods), 20, {},
                   held_out=self.splits, held_out_size=held_out_size)
        return pl.read_csv(csv), md.read_text()


def cell(frame, method, dataset, column="accuracy"):
    return frame.filter((pl.col("method") == method) & (pl.col("dataset") == dataset))[column].item()


def test_debate_rows_read_round_3_not_the_final_round(tmp_path):
    run = Run(tmp_path)
    run.add_questions("math500", {"q1": "1", "q2": "2"})
    run.add_vote("math500", {"q1": "1", "q2": "9"})
    run.add_round("math500", "mad", 3, {"q1": ["1", "1", "7", "8"], "q2": ["5", "2", "2", "3"]})
    # round 5 (the final predictions) is all wrong: Table 1 must not read it
    run.add_round("math500", "mad", 5, {"q1": ["0"] * 4, "q2": ["0"] * 4})
    t, md = run.table(["math500"], ["sc", "mad"])
    assert t.columns == wdh.CSV_COLUMNS
    assert cell(t, "mad", "math500") == 100.0 and cell(t, "sc", "math500") == 50.0
    assert set(t["source"]) == {"predictions", "round3"}
    assert "round 3" in md and "prints no Table 1 cells" in md and "No society split" in md
    with pytest.raises(ValueError, match="round 3"):
        wdh_table1(run.questions, [], [str(tmp_path / layout.debate_round(BB, "math500", "mad", 5))],
                   [str(tmp_path / layout.debate_round(BB, "math500", "mad", 5, "_state"))], str(tmp_path / "x.csv"),
                   str(tmp_path / "x.md"), [BB], ["math500"], {}, ["mad"], 20, {})


def test_a_question_stopped_before_round_3_keeps_its_answer_and_ties_go_to_the_lowest_agent(tmp_path):
    answers = wdh.round_answers({"q1": question("m", "q1", "1"), "q2": question("m", "q2", "2")},
                                [sample("q1", 3, i, a) for i, a in enumerate(["3", "1", "1", "3"])],
                                [state("q1", 3), state("q2", 3, stopped="2")])
    assert answers == {"q1": "3", "q2": "2"}  # 2–2 tie: agent 0's group
    # answers of the same value in two spellings are one vote group (the math type's equivalence)
    typed = wdh.round_answers({"q": question("m", "q", "1/2")}, [sample("q", 3, i, a) for i, a in
                                                                  enumerate(["0.5", "7", "1/2", "8"])], [state("q", 3)])
    assert wdh.score(typed, {"q": Gold(("\\frac{1}{2}",), "math")}) == {"q": True}


def test_held_out_only_and_the_same_questions_for_every_method(tmp_path):
    run = Run(tmp_path)
    run.add_questions("math500", {"q1": "1", "q2": "2", "q3": "3"})
    run.add_vote("math500", {"q1": "1", "q2": "0", "q3": "3"})
    run.add_round("math500", "mad", 3, {"q1": ["0"] * 3, "q2": ["2"] * 3, "q3": ["3"] * 3})
    run.add_split([("math500", "q1", "construction"), ("math500", "q2", "evaluation"), ("math500", "q3", "evaluation")])
    t, md = run.table(["math500"], ["sc", "mad"], held_out_size=1)
    assert cell(t, "sc", "math500", "questions") == cell(t, "mad", "math500", "questions") == 2
    assert cell(t, "sc", "math500") == 50.0 and cell(t, "mad", "math500") == 100.0
    assert "held-out questions only" in md and "1 question(s) per benchmark" in md and "MATH500 2" in md
    assert "construction questions left out: MATH500 1" in md and cell(t, "sc", "math500", "construction") == 1
    with pytest.raises(ValueError, match="same questions"):
        wdh.cells({(BB, "sc", "d"): {"q1": True}, (BB, "mad", "d"): {"q1": True, "q2": False}})


def test_avg_is_the_unweighted_mean_of_the_configured_columns_with_0_and_100_cells(tmp_path):
    run = Run(tmp_path)
    run.add_questions("amc12", {"a1": "1"})
    run.add_questions("math500", {"m1": "1", "m2": "2", "m3": "3"})
    run.add_questions("olympiadbench", {"o1": "1"})
    run.add_vote("amc12", {"a1": "1"})
    run.add_vote("math500", {"m1": "0", "m2": "0", "m3": "0"})
    run.add_vote("olympiadbench", {"o1": "1"})
    t, md = run.table(["amc12", "math500"], ["sc"])
    assert t["dataset"].to_list() == ["amc12", "math500", "avg"]  # OlympiadBench is not a column
    assert cell(t, "sc", "amc12") == 100.0 and cell(t, "sc", "math500") == 0.0
    assert cell(t, "sc", "avg") == 50.0  # not the question-weighted 25
    assert "| vote20 (sc) | 100.00 | 0.00 | 50.00 |" in md
    assert "| Method | AMC12 | MATH500 | Avg. |" in md


def test_one_column_one_question_no_split_and_a_missing_method(tmp_path):
    run = Run(tmp_path)
    run.add_questions("amc12", {"a1": "4"})
    run.add_round("amc12", "mad", 3, {"a1": ["4", "4", "1", "2"]})
    t, md = run.table(["amc12"], ["mad"])  # no sc: its row is absent, not empty
    assert t["method"].unique().to_list() == ["mad"]
    assert (cell(t, "mad", "amc12"), cell(t, "mad", "avg"), cell(t, "mad", "amc12", "questions")) == (100.0, 100.0, 1)
    assert "Vanilla Debate (mad)" in md and "AMC12 1" in md and "vote20" not in md.split("\n\n")[1]


def test_a_column_with_no_held_out_question_has_no_cell_and_no_avg(tmp_path):
    run = Run(tmp_path)
    run.add_questions("amc12", {"a1": "1"})
    run.add_questions("math500", {"m1": "1"})
    run.add_vote("amc12", {"a1": "1"})
    run.add_vote("math500", {"m1": "1"})
    run.add_split([("amc12", "a1", "construction"), ("math500", "m1", "evaluation")])
    t, md = run.table(["amc12", "math500"], ["sc"], held_out_size=1)
    assert cell(t, "sc", "amc12", "questions") == 0 and cell(t, "sc", "amc12") is None
    assert cell(t, "sc", "math500") == 100.0 and cell(t, "sc", "avg") is None
    assert "| vote20 (sc) | – | 100.00 | – |" in md and "AMC12 0" in md


def test_no_row_method_writes_a_note(tmp_path):
    run = Run(tmp_path)
    run.add_questions("amc12", {"a1": "1"})
    t, md = run.table(["amc12"], ["cot"])
    assert t.is_empty() and t.columns == wdh.CSV_COLUMNS and "nothing to report" in md


def test_rows_are_vote20_vanilla_debate_then_the_societies_and_labels():
    assert wdh.row_methods(["cot", "mad+top-k", "mad", "sc", "mad+ac-greedy", "truemad"]) == [
        "sc", "mad", "mad+top-k", "mad+ac-greedy"]
    assert wdh.column_label("gpqa", "gpqa-diamond") == "GPQA"
    assert wdh.column_label("mmlu-redux-philosophy", "mmlu-redux") == "MMLU-Redux: philosophy"
    assert wdh.column_label("amc12", "amc12") == "AMC12"
    assert wdh.columns({"paper": {}, "datasets": {"a": {}, "b": {}}}) == ["a", "b"]
    assert wdh.columns({"paper": {"wdh_datasets": ["b"]}, "datasets": {"a": {}, "b": {}}}) == ["b"]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 30), st.integers(1, 30)), min_size=1, max_size=8))
def test_avg_equals_the_mean_of_the_columns(cols):
    counts = {(BB, "sc", f"d{i}"): (min(c, n), n) for i, (c, n) in enumerate(cols)}
    datasets = [f"d{i}" for i in range(len(cols))]
    rows = wdh.table_rows(counts, [BB], ["sc"], datasets)
    accs = [r["accuracy"] for r in rows if r["dataset"] != wdh.AVG]
    avg = rows[-1]
    assert avg["dataset"] == wdh.AVG and avg["accuracy"] == pytest.approx(sum(accs) / len(accs))
    assert min(accs) - 1e-9 <= avg["accuracy"] <= max(accs) + 1e-9
    assert avg["questions"] == sum(n for _, n in cols)


# ------------------------------------------------------------------ the workflow

def test_the_wdh_config_plans_table1():
    """`snakemake -n --configfile config/wdh.yaml` (the default target) lists the table."""
    env = {**os.environ, "LMAD_ALLOW_TEST_DOUBLE": "1"}
    proc = subprocess.run([sys.executable, "-m", "snakemake", "--dry-run", "--forceall", "--configfile",
                           "config/wdh.yaml"], cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    assert "rule paper_wdh:" in out and "results/paper/wdh/table1.md" in out and "results/paper/wdh/table1.csv" in out
    block = re.search(r"rule paper_wdh:\n +input: (.*)\n", out).group(1)
    # round 3 of the debates, vote20's predictions, the split; never the final round, never OlympiadBench
    assert "/mad/round3.parquet" in block and "/mad+sc-greedy/round3_state.parquet" in block
    assert "predictions/sc.parquet" in block and "societies/split.parquet" in block
    assert "round5" not in block and "olympiadbench/" not in block


def test_fewer_than_3_rounds_fails_naming_debate_rounds(tmp_path):
    make_config(tmp_path, methods=["sc", "mad"], debate={"rounds": 2}, paper={"wdh": True})
    proc = snakemake(tmp_path, "-n", check=False)
    assert proc.returncode != 0 and "config debate.rounds" in proc.stdout + proc.stderr


def test_an_unknown_column_fails_naming_its_key(tmp_path):
    make_config(tmp_path, methods=["sc"], paper={"wdh": True, "wdh_datasets": ["nope"]})
    proc = snakemake(tmp_path, "-n", check=False)
    assert proc.returncode != 0 and "config paper.wdh_datasets" in proc.stdout + proc.stderr


def test_a_scripted_run_writes_the_table(tmp_path):
    demo = REPO / "data" / "demo"
    make_config(tmp_path, methods=["sc", "mad"], debate={"rounds": 3}, paper={"wdh": True},
                datasets={d: {"source": "jsonl", "path": str(demo / f"{d}.jsonl"), "n": 2} for d in ("amc12", "math500")})
    snakemake(tmp_path, "results/paper/wdh/table1.md")
    t = pl.read_csv(tmp_path / "results/paper/wdh/table1.csv")
    assert t["dataset"].to_list() == ["amc12", "math500", "avg"] * 2
    assert t["method"].unique(maintain_order=True).to_list() == ["sc", "mad"]
    assert set(t["questions"].to_list()[:2]) == {2}
    md = (tmp_path / "results/paper/wdh/table1.md").read_text()
    assert "| Method | AMC12 | MATH500 | Avg. |" in md and "Vanilla Debate (mad)" in md


# ------------------------------------------------------------------ §A.5: paired gains over runs

def avg_rows(avgs: dict[tuple[str, str], float | None]) -> list[dict]:
    """Table 1's Avg. rows of replicate runs: {(run, method): Avg.}."""
    return [{"backbone": b, "method": m, "dataset": wdh.AVG, "accuracy": a} for (b, m), a in avgs.items()]


def test_paired_gains_over_five_runs_against_vanilla_debate():
    society, runs = "mad+sc-greedy", [f"qwen/seed{s}" for s in range(5)]
    vanilla = [60.0, 62.0, 61.0, 59.0, 63.0]
    gains = [1.0, 2.0, 0.5, 1.5, 1.0]
    rows = avg_rows({**{(r, "mad"): v for r, v in zip(runs, vanilla)},
                     **{(r, society): v + g for r, v, g in zip(runs, vanilla, gains)},
                     **{(r, "sc"): 50.0 for r in runs}})
    (got,) = wdh.paired_gains(rows)  # vote20 is no society debate: no row
    assert (got["backbone"], got["method"], got["baseline"], got["runs"], got["seeds"]) == ("qwen", society, "mad", 5,
                                                                                            [0, 1, 2, 3, 4])
    assert got["gains"] == pytest.approx(gains) and got["mean_gain"] == pytest.approx(1.2)
    # mean ± t(0.975, 4) · SD / √5, SD = 0.570, as scipy's own interval and one-sample t-test of the gains
    assert got["sd"] == pytest.approx(0.5700877, abs=1e-6)
    low, high = scipy_stats.t.interval(0.95, 4, loc=1.2, scale=scipy_stats.sem(gains))
    assert (got["ci_low"], got["ci_high"]) == (pytest.approx(low), pytest.approx(high))
    assert got["p_value"] == pytest.approx(scipy_stats.ttest_1samp(gains, 0).pvalue)
    assert type(got["ci_low"]) is float and "| 5 | +1.20 | 0.57 | [+0.49, +1.91] | 0.00926 |" in wdh.robustness_markdown([got])


def test_paired_gains_edges_one_run_no_spread_and_a_missing_cell():
    one = wdh.paired_gains(avg_rows({("m/seed0", "mad"): 50.0, ("m/seed0", "mad+top-k"): 55.0}))
    assert one[0]["runs"] == 1 and one[0]["sd"] is None and one[0]["ci_low"] is None and one[0]["p_value"] is None
    flat = wdh.paired_gains(avg_rows({("m/seed0", "mad"): 50.0, ("m/seed0", "mad+top-k"): 52.0,
                                      ("m/seed1", "mad"): 40.0, ("m/seed1", "mad+top-k"): 42.0,
                                      ("m/seed2", "mad"): 30.0, ("m/seed2", "mad+top-k"): None}))
    assert flat[0]["runs"] == 2 and flat[0]["mean_gain"] == 2.0 and flat[0]["sd"] == 0 and flat[0]["p_value"] is None
    assert wdh.paired_gains(avg_rows({("m/seed0", "mad"): 50.0})) == []
    assert "nothing to compare" in wdh.robustness_markdown([])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 100), st.floats(0, 100)), min_size=2, max_size=6))
def test_the_interval_holds_the_mean_gain_of_the_runs(pairs):
    rows = avg_rows({**{(f"m/seed{i}", "mad"): v for i, (v, _) in enumerate(pairs)},
                     **{(f"m/seed{i}", "mad+ac-greedy"): s for i, (_, s) in enumerate(pairs)}})
    (got,) = wdh.paired_gains(rows)
    assert got["runs"] == len(pairs)
    assert got["mean_gain"] == pytest.approx(sum(s - v for v, s in pairs) / len(pairs), abs=1e-9)
    if got["ci_low"] is not None:
        assert got["ci_low"] <= got["mean_gain"] <= got["ci_high"] and 0 <= got["p_value"] <= 1
    md = wdh.robustness_markdown([got])
    assert f"| {len(pairs)} |" in md


def test_the_robustness_overlay_plans_the_paired_table():
    env = {**os.environ, "LMAD_ALLOW_TEST_DOUBLE": "1"}
    proc = subprocess.run([sys.executable, "-m", "snakemake", "--dry-run", "--forceall", "--configfile", "config/wdh.yaml",
                           "config/wdh-robustness.yaml"], cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    assert "rule paper_wdh_robustness:" in out and "results/paper/wdh/robustness.md" in out
    # five runs per backbone, each with its own pool, societies and debates
    pools = set(re.findall(r"output: results/([\w.-]+/seed\d)/societies/pool.parquet", out))
    assert pools == {f"{b}/seed{s}" for b in ("qwen3-4b", "olmo3-7b") for s in range(5)}


def test_a_scripted_run_over_two_seeds_writes_the_paired_gains(tmp_path):
    demo = REPO / "data" / "demo"
    make_config(tmp_path, methods=["sc", "mad", "mad+top-k"], debate={"rounds": 3}, paper={"wdh": True}, seeds=[0, 1],
                societies={"enabled": True, "k": 2, "split": {"size": 1},
                           "pool": {"temperatures": [0.1, 0.9], "personas": ["plain"],
                                    "variants": ["standard"], "perturbations": []}},
                datasets={d: {"source": "jsonl", "path": str(demo / f"{d}.jsonl"), "n": 2} for d in ("amc12", "math500")})
    snakemake(tmp_path, "results/paper/wdh/robustness.md")
    t1 = pl.read_csv(tmp_path / "results/paper/wdh/table1.csv")
    assert set(t1["backbone"]) == {"scripted/seed0", "scripted/seed1"}
    got = pl.read_csv(tmp_path / "results/paper/wdh/robustness.csv")
    assert got["method"].to_list() == ["mad+top-k"] and got["runs"].to_list() == [2]
    avg = {(r["backbone"], r["method"]): r["accuracy"] for r in t1.to_dicts() if r["dataset"] == wdh.AVG}
    gains = [avg[(f"scripted/seed{s}", "mad+top-k")] - avg[(f"scripted/seed{s}", "mad")] for s in (0, 1)]
    assert got["mean_gain"][0] == pytest.approx(sum(gains) / 2)
    assert "§A.5" in (tmp_path / "results/paper/wdh/robustness.md").read_text()
