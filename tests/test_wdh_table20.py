"""When Debate Helps' Table 20 (§A.12.2; rule paper_wdh_table20, results/paper/wdh/table20.{csv,md}): per
debate row and displayed column, the R0 proposal hit of the method's own round-0 answers, their R0 vote,
the final accuracy after the last round and the lift over the own R0 vote, on the held-out questions
when the run has a society split, Avg. the unweighted mean of the columns; the caption names the run's
seed, and config/wdh-new-seed.yaml is the second-seed run that gives the paper's table."""
import os
import re
import subprocess
import sys

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import test_wdh_table1 as t1
from conftest import REPO, make_config, snakemake
from lmad import layout
from lmad.paper import wdh
from lmad.paper.headroom import question_flags, summarize
from lmad.answers import Gold
from lmad.schemas import write_table
from lmad.stages.paper_wdh import wdh_table20

BB = "bb"
METRICS = list(wdh.TABLE20_METRICS)


def judgment(dataset, qid, method, prediction):
    return {"qid": qid, "dataset": dataset, "method": method, "prediction": prediction, "gold": "", "aliases": [],
            "judge_model": "j", "judge_verdict": "rule", "judge_correct": None, "judge_raw": "", "correct": None,
            "em": 0.0, "f1": 0.0, "prompt_tokens": 0, "completion_tokens": 0, "finish_reason": "stop", "cached": False}


class Tree(t1.Run):
    """Questions, the shared proposals, each debate's round 0, the judgments (final predictions), a split."""

    def __init__(self, root):
        super().__init__(root)
        self.proposals, self.judgments, self.rounds0 = [], [], []

    def add_dataset(self, dataset, golds, proposals, own, finals, backbone=BB):
        """``proposals`` {qid: answers}; ``own`` {method: {qid: round-0 answers}}; ``finals`` {method: {qid: answer}}."""
        self.add_questions(dataset, golds)
        p = self.path(layout.samples(backbone, dataset, "proposals"))
        write_table("samples", [t1.sample(q, 0, i, a) for q, said in proposals.items() for i, a in enumerate(said)], p)
        self.proposals.append(str(p))
        for method, answers in own.items():
            p = self.path(layout.debate_round(backbone, dataset, method, 0))
            write_table("samples", [t1.sample(q, 0, i, a) for q, said in answers.items() for i, a in enumerate(said)], p)
            self.rounds0.append(str(p))
        p = self.path(layout.judgments(backbone, dataset))
        write_table("judgments", [judgment(dataset, q, m, a) for m, said in finals.items() for q, a in said.items()], p)
        self.judgments.append(str(p))

    def table20(self, datasets, methods, seed=0, held_out_size=None, backbones=(BB,)):
        csv, md = self.root / "t20.csv", self.root / "t20.md"
        wdh_table20(self.questions, self.proposals, self.judgments, self.rounds0, str(csv), str(md), list(backbones),
                    list(datasets), {d: d for d in datasets}, list(methods), seed, 5, {}, held_out=self.splits,
                    held_out_size=held_out_size)
        return pl.read_csv(csv), md.read_text()


def cell(frame, method, dataset, column):
    return frame.filter((pl.col("method") == method) & (pl.col("dataset") == dataset))[column].item()


def test_own_round0_hit_and_vote_the_final_and_the_lift(tmp_path):
    tree = Tree(tmp_path)
    # q1: the proposals miss, mad's own round 0 has the gold in a minority (hit, vote wrong), final right
    # q2: every round-0 answer right, final wrong (damage); q3: all wrong, final wrong
    tree.add_dataset("math500", {"q1": "1", "q2": "2", "q3": "3"},
                     proposals={q: ["9"] * 4 for q in ("q1", "q2", "q3")},
                     own={"mad": {"q1": ["1", "7", "7", "8"], "q2": ["2"] * 4, "q3": ["0"] * 4}},
                     finals={"mad": {"q1": "1", "q2": "5", "q3": "0"}, "sc": {"q1": "1", "q2": "2", "q3": "3"}})
    t, md = tree.table20(["math500"], ["sc", "mad"], seed=7)
    assert t.columns == wdh.TABLE20_COLUMNS
    assert t["method"].unique().to_list() == ["mad"]  # vote20 is not a debate row
    got = {k: cell(t, "mad", "math500", k) for k in METRICS}
    assert got == pytest.approx({"hit_r0": 200 / 3, "vote_r0": 100 / 3, "final": 100 / 3, "lift": 0.0})
    assert cell(t, "mad", "avg", "final") == pytest.approx(100 / 3) and set(t["seed"]) == {7}
    assert "seed 7" in md and "Table 20" in md and "after round 5" in md and "| Method | MATH500 R0 hit |" in md
    assert "no Table 20 cell" in md and "84.93" in md and "No society split" in md


def test_held_out_only_a_column_without_held_out_questions_and_a_replicate_seed(tmp_path):
    tree = Tree(tmp_path)
    run = "bb/seed3"
    tree.add_dataset("amc12", {"a1": "4"}, proposals={"a1": ["4"] * 4}, own={}, finals={"mad": {"a1": "4"}}, backbone=run)
    tree.add_dataset("math500", {"m1": "1", "m2": "2"}, proposals={"m1": ["1", "0", "0", "0"], "m2": ["0"] * 4},
                     own={}, finals={"mad": {"m1": "1", "m2": "2"}}, backbone=run)
    tree.add_split([("amc12", "a1", "construction"), ("math500", "m1", "evaluation"), ("math500", "m2", "evaluation")],
                   backbone=run)
    t, md = tree.table20(["amc12", "math500"], ["mad"], seed=0, held_out_size=1, backbones=(run,))
    assert cell(t, "mad", "amc12", "questions") == 0 and cell(t, "mad", "amc12", "final") is None
    assert cell(t, "mad", "amc12", "construction") == 1
    # mad has no own round 0 here: the shared proposals are its R0 (m1: a minority hit; m2: none)
    assert (cell(t, "mad", "math500", "hit_r0"), cell(t, "mad", "math500", "vote_r0")) == (50.0, 0.0)
    assert (cell(t, "mad", "math500", "final"), cell(t, "mad", "math500", "lift")) == (100.0, 100.0)
    assert all(cell(t, "mad", "avg", k) is None for k in METRICS)  # a column without a value: no Avg.
    assert set(t["seed"]) == {3} and "seed 3" in md and "held-out questions only" in md
    assert "construction questions left out: AMC12 1, MATH500 0" in md


def test_no_debate_method_writes_a_note(tmp_path):
    tree = Tree(tmp_path)
    tree.add_dataset("amc12", {"a1": "4"}, proposals={"a1": ["4"] * 4}, own={}, finals={"sc": {"a1": "4"}})
    t, md = tree.table20(["amc12"], ["sc"])
    assert t.is_empty() and t.columns == wdh.TABLE20_COLUMNS and "nothing to report" in md


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.tuples(st.lists(st.integers(0, 1), min_size=4, max_size=4), st.integers(0, 1)),
                         min_size=0, max_size=6), min_size=1, max_size=4),
       st.booleans())
def test_table20_cells_lift_and_avg(columns, with_absent):
    """Any columns of questions (each: the agents' R0 flags and the final flag; none: a column with no
    held-out question; all wrong and all right included): hit ≥ vote, lift = final − vote, Avg. the
    unweighted mean of the columns and None when one has no value; an absent method has no row."""
    gold = Gold(("1",), "math")
    cells = {}
    for i, qs in enumerate(columns):
        if qs:
            flags = [question_flags(["1" if f else str(10 + j) for j, f in enumerate(r0)], "1" if fin else "0", gold)
                     for r0, fin in qs]
            cells[(BB, "mad", f"d{i}")] = summarize(flags, f"d{i}")
    datasets = [f"d{i}" for i in range(len(columns))]
    methods = ["sc", "mad"] + ["mad+top-k"] * with_absent
    rows = wdh.table20_rows(cells, [BB], methods, datasets, {BB: 1})
    if not cells:
        assert rows == []
        return
    assert {r["method"] for r in rows} == {"mad"} and [r["dataset"] for r in rows] == [*datasets, wdh.AVG]
    for r in rows[:-1]:
        if r["questions"]:
            assert 0 <= r["vote_r0"] <= r["hit_r0"] <= 100 and 0 <= r["final"] <= 100
            assert r["lift"] == pytest.approx(r["final"] - r["vote_r0"])
        else:
            assert all(r[k] is None for k in METRICS)
    avg = rows[-1]
    if all(qs for qs in columns):
        for k in METRICS:
            assert avg[k] == pytest.approx(sum(r[k] for r in rows[:-1]) / len(columns))
        assert avg["lift"] == pytest.approx(avg["final"] - avg["vote_r0"])
    else:
        assert all(avg[k] is None for k in METRICS)
    assert avg["questions"] == sum(len(qs) for qs in columns) and avg["seed"] == 1


# ------------------------------------------------------------------ the workflow

def test_the_new_seed_overlay_plans_table20_of_a_second_seed():
    """`snakemake -n --configfile config/wdh.yaml config/wdh-new-seed.yaml` plans Table 20 of the seed-1 runs:
    their own pool, societies and debates, the final (round-5) predictions and each debate's own round 0."""
    env = {**os.environ, "LMAD_ALLOW_TEST_DOUBLE": "1"}
    proc = subprocess.run([sys.executable, "-m", "snakemake", "--dry-run", "--forceall", "--configfile", "config/wdh.yaml",
                           "config/wdh-new-seed.yaml"], cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    assert "rule paper_wdh_table20:" in out
    assert "results/paper/wdh/table20.md" in out and "results/paper/wdh/table20.csv" in out
    block = re.search(r"rule paper_wdh_table20:\n +input: (.*)\n", out).group(1)
    assert "results/qwen3-4b/seed1/gpqa/judgments.parquet" in block and "/mad+ac-greedy/round0.parquet" in block
    assert "results/olmo3-7b/seed1/societies/split.parquet" in block and "olympiadbench/" not in block
    assert "results/qwen3-4b/gpqa/" not in block  # only the new seed's runs
    pools = set(re.findall(r"output: results/([\w.-]+/seed\d)/societies/pool.parquet", out))
    assert pools == {"qwen3-4b/seed1", "olmo3-7b/seed1"}
    assert "rule paper_wdh_robustness:" not in out  # one run: no paired gains


def test_a_scripted_run_writes_table20_agreeing_with_the_headroom_table(tmp_path):
    demo = REPO / "data" / "demo"
    make_config(tmp_path, methods=["sc", "mad", "mad+top-k"], debate={"rounds": 3}, paper={"wdh": True}, seeds=[2],
                societies={"enabled": True, "k": 2, "split": {"size": 1},
                           "pool": {"temperatures": [0.1, 0.9], "personas": ["plain"],
                                    "variants": ["standard"], "perturbations": []}},
                datasets={d: {"source": "jsonl", "path": str(demo / f"{d}.jsonl"), "n": 3} for d in ("amc12", "math500")})
    snakemake(tmp_path, "results/paper/wdh/table20.md", "results/paper/wdh/headroom.csv")
    t = pl.read_csv(tmp_path / "results/paper/wdh/table20.csv")
    assert t.columns == wdh.TABLE20_COLUMNS
    assert t["dataset"].to_list() == ["amc12", "math500", "avg"] * 2
    assert t["method"].unique(maintain_order=True).to_list() == ["mad", "mad+top-k"]
    assert set(t["backbone"]) == {"scripted/seed2"} and set(t["seed"]) == {2}
    assert t.filter(pl.col("dataset") != "avg")["questions"].to_list() == [2, 2, 2, 2]  # 3 − 1 construction
    for r in t.to_dicts():
        assert r["lift"] == pytest.approx(r["final"] - r["vote_r0"])
    # the per-dataset cells are the headroom table's own flags on the same held-out questions
    head = pl.read_csv(tmp_path / "results/paper/wdh/headroom.csv")  # with the paper's tables (paper.wdh)
    assert not (tmp_path / "results/paper/headroom.csv").exists()
    for r in t.filter(pl.col("dataset") != "avg").to_dicts():
        h = head.filter((pl.col("method") == r["method"]) & (pl.col("dataset") == r["dataset"])).row(0, named=True)
        assert (r["hit_r0"], r["vote_r0"], r["final"], r["lift"]) == pytest.approx(
            (h["hit_rate"], h["vote_acc"], h["final_em"], h["gain"]))
    for m in ("mad", "mad+top-k"):
        cols = t.filter((pl.col("method") == m) & (pl.col("dataset") != "avg"))["final"].to_list()
        assert cell(t, m, "avg", "final") == pytest.approx(sum(cols) / 2)
    md = (tmp_path / "results/paper/wdh/table20.md").read_text()
    assert "## scripted/seed2 (seed 2)" in md and "3-round debate results, seed 2" in md
    assert "| Method | AMC12 R0 hit | AMC12 R0 vote | AMC12 Final | AMC12 Lift | MATH500 R0 hit |" in md
    assert "Vanilla Debate (mad)" in md and "held-out questions only" in md
