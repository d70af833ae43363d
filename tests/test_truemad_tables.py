"""TrueMAD's Table 1, Tables 4–6 and 7–9 (rule paper_truemad) and Tables 10–11 (rule paper_truemad_process),
results/paper/truemad/: Agent ACC and strict-majority Vote ACC per benchmark, each benchmark pooled over
its datasets (AIME's copies are one benchmark), Avg. over the benchmarks, mean ± sample SD over the
seeds; one seed has no SD; the process-level scores RP / EI / NC and CPL / AME / CMP1v3 the same way."""
import json
import math
import os
import statistics

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import REPO, make_config, scripted_model, snakemake, write_config
from lmad.paper import label
from lmad.paper import truemad as tm
from truemad_oracle import AIME_A, AIME_B


def rounds(*flags):
    """One question's rounds from its agents' flags per round; the vote is a strict majority of right agents
    (every wrong agent gives a different wrong answer here)."""
    return [(list(f), int(2 * sum(f) > len(f))) for f in flags]


BENCH = {"aime-a": "aime", "aime-b": "aime", "gpqa-diamond": "gpqa-diamond", "truthfulqa": "truthfulqa"}


def scores_of(run, method, by_dataset):
    return {(run, d, method): per_q for d, per_q in by_dataset.items()}


def test_aime_copies_pool_into_one_benchmark_weighted_by_question():
    one = {"aime-a": {"q1": rounds((1, 1, 1))},
           "aime-b": {"q2": rounds((1, 1, 0)), "q3": rounds((0, 0, 0)), "q4": rounds((0, 0, 1))}}
    got = tm.pooled(one, BENCH)
    assert list(got) == ["aime"] and got["aime"]["n"] == 4
    assert got["aime"]["agent"] == [pytest.approx(100 * 6 / 12)]  # not (100 + 100 * 3 / 9) / 2
    assert got["aime"]["vote"] == [50.0]


def test_table1_mean_and_sample_sd_over_seeds_and_the_avg_over_benchmarks():
    scores = {}
    right = {"seed0": (1, 1, 1), "seed1": (1, 1, 0), "seed2": (1, 0, 0)}  # agent acc 100, 66.67, 33.33 on GPQA
    for seed, flags in right.items():
        run = f"m/{seed}"
        scores |= scores_of(run, "mad", {"aime-a": {"q": rounds((0, 0, 0), (1, 1, 1))},
                                         "aime-b": {"q": rounds((0, 0, 0), (1, 1, 1))},
                                         "gpqa-diamond": {"q": rounds(flags, flags)},
                                         "truthfulqa": {"q": rounds((0, 0, 0), (0, 0, 0))}})
    cells = tm.runs_by_cell(scores, BENCH)
    order = tm.benchmark_order(BENCH)
    assert order == ["aime", "gpqa-diamond", "truthfulqa"]
    rows = {r["benchmark"]: r for r in tm.table1_rows(cells, order, ["mad"])}
    assert list(rows) == [*order, "avg"]
    assert rows["aime"]["agent_acc"] == 100 and rows["aime"]["agent_acc_sd"] == 0 and rows["aime"]["questions"] == 2
    agent = [100, 200 / 3, 100 / 3]
    assert rows["gpqa-diamond"]["agent_acc"] == pytest.approx(statistics.mean(agent))
    assert rows["gpqa-diamond"]["agent_acc_sd"] == pytest.approx(statistics.stdev(agent))
    assert rows["gpqa-diamond"]["vote_acc"] == pytest.approx(200 / 3)  # 1, 1, 0: a strict majority of 3 needs 2
    assert rows["truthfulqa"]["agent_acc"] == 0 and rows["truthfulqa"]["vote_acc"] == 0
    avgs = [(100 + a + 0) / 3 for a in agent]  # per seed over the three benchmarks, not over four datasets
    assert rows["avg"]["agent_acc"] == pytest.approx(statistics.mean(avgs))
    assert rows["avg"]["agent_acc_sd"] == pytest.approx(statistics.stdev(avgs))
    assert rows["avg"]["seeds"] == 3 and rows["avg"]["questions"] == 4
    md = tm.table1_markdown(tm.table1_rows(cells, order, ["mad"]), order, label)
    assert "100.00 ± 0.00" in md and "0.00 ± 0.00" in md and "over 3 seed(s)" in md


def test_one_seed_shows_no_sd_rather_than_zero():
    cells = tm.runs_by_cell(scores_of("m", "mad", {"truthfulqa": {"q": rounds((1, 1, 0))}}), BENCH)
    rows = tm.table1_rows(cells, ["truthfulqa"], ["mad"])
    assert rows[0]["agent_acc_sd"] is None and rows[0]["seeds"] == 1
    md = tm.table1_markdown(rows, ["truthfulqa"], label)
    assert "66.67 ± n/a" in md and "100.00 ± n/a" in md and "± 0.00" not in md and "no SD, shown as n/a" in md
    assert tm.cell(None, None, 0) == "–"


def test_tie_at_the_vote_counts_wrong():
    two_of_four = {"truthfulqa": {"q": [([1, 1, 0, 0], 0)]}}  # an even split has no strict majority
    cells = tm.runs_by_cell(scores_of("m", "mad", two_of_four), BENCH)
    row = tm.table1_rows(cells, ["truthfulqa"], ["mad"])[0]
    assert (row["agent_acc"], row["vote_acc"]) == (50.0, 0.0)


def test_round_tables_start_at_r2_and_bold_the_best_mean():
    scores = scores_of("m/seed0", "mad", {"truthfulqa": {"q": rounds((0, 0, 0), (1, 0, 0), (1, 1, 0))}})
    scores |= scores_of("m/seed0", "truemad", {"truthfulqa": {"q": rounds((0, 0, 0), (1, 1, 1), (1, 1, 1))}})
    per_round = tm.round_rows(tm.runs_by_cell(scores, BENCH), ["truthfulqa"], ["mad", "truemad"])
    assert [(r["method"], r["round"]) for r in per_round] == [(m, f"R{t}") for m in ("mad", "truemad") for t in (1, 2, 3)]
    md = tm.rounds_markdown(per_round, ["truthfulqa"], label)
    assert "Table 6: TruthfulQA" in md and "| Method | R2 | R3 |" in md and "R1 |" not in md
    assert "**100.00 ± n/a**" in md


def test_the_published_gains_are_the_summarys():
    # the TrueMAD summary gives no Table 1 cell; these averaged gains (§4.2) are all it quotes
    assert tm.PUBLISHED_GAINS == {("truemad", "mad"): (3.62, 3.52), ("truedmad", "dmad-manners"): (4.72, 4.06)}


def test_tables_7_to_9_group_by_each_methods_own_r1_and_read_the_last_round():
    # 4 agents: q1 wrong majority (1 of 4 right at R1), q2 even split, q3 correct majority, q4 no one right
    per_q = {"q1": rounds((1, 0, 0, 0), (1, 1, 1, 1)), "q2": rounds((1, 1, 0, 0), (1, 1, 1, 0)),
             "q3": rounds((1, 1, 1, 0), (0, 0, 0, 0)), "q4": rounds((0, 0, 0, 0), (0, 0, 0, 0))}
    seed1 = {"q1": rounds((1, 0, 0, 0), (1, 1, 0, 0)), "q2": rounds((1, 1, 1, 1), (1, 1, 1, 1)),
             "q3": rounds((1, 1, 1, 0), (1, 1, 1, 1)), "q4": rounds((0, 0, 0, 0), (0, 0, 0, 0))}
    scores = scores_of("m/seed0", "mad", {"truthfulqa": per_q}) | scores_of("m/seed1", "mad", {"truthfulqa": seed1})
    rows = {r["group"]: r for r in tm.composition_rows(tm.runs_by_cell(scores, BENCH), ["truthfulqa"], ["mad"])}
    assert list(rows) == ["wrong_majority", "even_split", "correct_majority", "difficult"]
    # wrong majority: seed0 q1 + q4 → (4 + 0) / 8 = 50 %; seed1 q1 + q4 → 2 / 8 = 25 %
    wm = rows["wrong_majority"]
    assert (wm["agent_acc"], wm["seeds"], wm["questions_min"], wm["questions_max"]) == (37.5, 2, 2, 2)
    assert wm["agent_acc_sd"] == pytest.approx(statistics.stdev([50, 25]))
    # even split only in seed0 (q2: 3 of 4 right at the last round); seed1 has none: left out, not 0
    es = rows["even_split"]
    assert (es["agent_acc"], es["seeds"], es["agent_acc_sd"], es["questions_min"], es["questions_max"]) == (75, 1, None, 0, 1)
    # correct majority: seed0 q3 → 0 %; seed1 q2 + q3 → 100 %
    assert rows["correct_majority"]["agent_acc"] == 50
    # difficult = wrong majority ∪ even split: seed0 (4 + 3 + 0) / 12, seed1 as its wrong majority
    assert rows["difficult"]["agent_acc"] == pytest.approx((700 / 12 + 25) / 2)
    md = tm.compositions_markdown(list(rows.values()), ["truthfulqa"], label)
    assert "## Table 9: TruthfulQA, m" in md
    assert "| Method | Wrong majority | Even split | Correct majority | Difficult (≥ half wrong) |" in md
    assert "75.00 ± n/a" in md and "MAD: 2, 0–1, 1–2, 2–3" in md


def test_a_difficult_group_is_the_union_of_its_two_parts():
    from lmad.paper.dynamics import composition, is_difficult
    for right in range(5):
        flags = [1] * right + [0] * (4 - right)
        assert is_difficult(flags) == (composition(flags) in ("wrong_majority", "even_split"))


# ------------------------------------------------------------------ a run of a truemad.yaml-shaped config

TRUEMAD_ROLES = ("solver", "debate_revise", "debate_advise")
OUT = ["table1.csv", "table1.md", "tables4-6.csv", "tables4-6.md", "tables7-9.csv", "tables7-9.md", "tables10-11.csv",
       "tables10-11.md"]


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("truemad")
    config = make_config(workdir, models={"oracle": {**scripted_model(), "responder": "truemad_oracle:respond"}},
                         backbones=["oracle"], methods=["mad", "truemad"], seeds=[0, 1],
                         debate={"rounds": 1}, paper={"columns": ["mad", "truemad"], "truemad": True},
                         process={"rubric": True, "battery_questions": 0})
    datasets = {}
    for name, rows in (("aime-a", AIME_A), ("aime-b", AIME_B)):
        path = workdir / f"{name}.jsonl"
        path.write_text("".join(json.dumps({"id": f"{name}-{i}", "problem": p, "answer": a}) + "\n"
                                for i, (p, a) in enumerate(rows)))
        datasets[name] = {"type": "aime", "source": "jsonl", "path": str(path), "n": len(rows)}
    datasets["gpqa-diamond"] = {"source": "local", "path": str(REPO / "data/demo/gpqa-diamond.csv"), "n": 2}
    datasets["truthfulqa"] = {"source": "jsonl", "path": str(REPO / "data/demo/truthfulqa.jsonl"), "n": 3}
    config["datasets"] = datasets
    config["prompts"] |= {r: str(REPO / f"config/prompts/truemad/{r}.txt") for r in TRUEMAD_ROLES}
    write_config(workdir, config)
    env = {"PYTHONPATH": os.pathsep.join([str(REPO / "tests"), os.environ.get("PYTHONPATH", "")])}
    dry = snakemake(workdir, "-n", "paper", env=env)
    snakemake(workdir, *(f"results/paper/truemad/{f}" for f in OUT), "results/paper/dynamics.csv", env=env)
    return workdir, dry.stdout + dry.stderr


def test_the_dry_run_lists_the_truemad_tables(finished):
    _, dry = finished
    assert "paper_truemad" in dry and "paper_truemad_process" in dry
    for f in OUT:
        assert f"results/paper/truemad/{f}" in dry


def test_table1_of_the_run(finished):
    workdir, _ = finished
    t1 = pl.read_csv(workdir / "results/paper/truemad/table1.csv")
    assert t1.columns == ["backbone", "method", "benchmark", "questions", "seeds", "agent_acc", "agent_acc_sd",
                          "vote_acc", "vote_acc_sd"]
    assert t1["method"].unique(maintain_order=True).to_list() == ["mad", "truemad"]
    # one AIME benchmark of 4 questions, not two entries
    assert t1["benchmark"].to_list() == ["aime", "gpqa-diamond", "truthfulqa", "avg"] * 2
    rows = {(r["method"], r["benchmark"]): r for r in t1.to_dicts()}
    for m in ("mad", "truemad"):
        aime = rows[(m, "aime")]
        # pooled: 2 of 4 questions right (50 %), not the copies' mean (100 % and 33.33 %)
        assert (aime["questions"], aime["seeds"], aime["agent_acc"], aime["vote_acc"]) == (4, 2, 50.0, 50.0)
        assert aime["agent_acc_sd"] == 0.0
        assert (rows[(m, "gpqa-diamond")]["agent_acc"], rows[(m, "gpqa-diamond")]["vote_acc"]) == (0.0, 0.0)
    # TruthfulQA agrees with the per-run, per-dataset dynamics table: mean and sample SD over the 2 seeds
    dyn = pl.read_csv(workdir / "results/paper/dynamics.csv").filter(pl.col("dataset") == "truthfulqa")
    for m in ("mad", "truemad"):
        per_seed = dyn.filter(pl.col("method") == m).sort("backbone")
        for kind, col in (("agent_acc", "agent_acc_r1"), ("vote_acc", "majority_acc_r1")):
            values = per_seed[col].to_list()
            assert len(values) == 2
            assert rows[(m, "truthfulqa")][kind] == pytest.approx(statistics.mean(values))
            assert rows[(m, "truthfulqa")][f"{kind}_sd"] == pytest.approx(statistics.stdev(values))
        avg = rows[(m, "avg")]
        assert avg["agent_acc"] == pytest.approx((50 + 0 + rows[(m, "truthfulqa")]["agent_acc"]) / 3)
    md = (workdir / "results/paper/truemad/table1.md").read_text()
    assert "| Method | AIME Agent ACC | AIME Vote ACC | GPQA-Diamond Agent ACC" in md
    assert "Avg. Vote ACC |" in md and "over 2 seed(s)" in md and "AIME 4" in md
    assert "no Table 1 cells" in md and "+3.62" in md


def test_tables_4_to_6_of_the_run(finished):
    workdir, _ = finished
    t = pl.read_csv(workdir / "results/paper/truemad/tables4-6.csv")
    assert set(t["round"]) == {"R1", "R2"} and set(t["benchmark"]) == {"aime", "gpqa-diamond", "truthfulqa"}
    md = (workdir / "results/paper/truemad/tables4-6.md").read_text()
    for title in ("Table 4: AIME", "Table 5: GPQA-Diamond", "Table 6: TruthfulQA"):
        assert title in md
    assert "| Method | R2 |" in md


def test_tables_7_to_9_of_the_run(finished):
    workdir, _ = finished
    t = pl.read_csv(workdir / "results/paper/truemad/tables7-9.csv")
    assert set(t["benchmark"]) == {"aime", "gpqa-diamond", "truthfulqa"}
    assert set(t["group"]) == {"wrong_majority", "even_split", "correct_majority", "difficult"}
    # every question of a benchmark falls in exactly one of the three exclusive groups, in every run
    for (m, b), part in t.group_by(["method", "benchmark"]):
        exclusive = part.filter(pl.col("group") != "difficult")
        assert exclusive["questions_mean"].sum() == {"aime": 4, "gpqa-diamond": 2, "truthfulqa": 3}[b]
    md = (workdir / "results/paper/truemad/tables7-9.md").read_text()
    for title in ("Table 7: AIME", "Table 8: GPQA-Diamond", "Table 9: TruthfulQA"):
        assert title in md


def test_tables_10_to_11_of_the_run(finished):
    workdir, _ = finished
    t = pl.read_csv(workdir / "results/paper/truemad/tables10-11.csv")
    from lmad.stages.paper_truemad import PROCESS_COLUMNS
    assert t.columns == PROCESS_COLUMNS
    assert t["benchmark"].to_list() == ["aime", "gpqa-diamond", "truthfulqa"] * 2
    assert t["method"].unique(maintain_order=True).to_list() == ["mad", "truemad"]
    assert set(t["seeds"]) == {2} and set(t["k"]) == {3} and set(t["rubric_status"]) == {"unvalidated"}
    assert t["rp"].is_null().all() and (t["scored"] > 0).all()  # scored, but an unvalidated judge is not shown
    aime = t.filter((pl.col("method") == "mad") & (pl.col("benchmark") == "aime")).row(0, named=True)
    assert aime["questions"] == 4  # AIME's two copies are one benchmark
    # TruthfulQA (one dataset) agrees with the per-run dynamics table: mean and sample SD over the seeds
    dyn = pl.read_csv(workdir / "results/paper/dynamics.csv").filter(pl.col("dataset") == "truthfulqa")
    for m in ("mad", "truemad"):
        row = t.filter((pl.col("method") == m) & (pl.col("benchmark") == "truthfulqa")).row(0, named=True)
        for metric, col in (("ame", "ame"), ("cmp", "cmp_1vK")):
            values = [v for v in dyn.filter(pl.col("method") == m)[col].to_list() if v is not None and v == v]
            assert row[f"{metric}_seeds"] == len(values)
            if values:
                assert row[metric] == pytest.approx(statistics.mean(values))
    md = (workdir / "results/paper/truemad/tables10-11.md").read_text()
    assert "## Table 10: oracle" in md and "## Table 11: oracle" in md
    assert "| Method | AIME RP | AIME EI | AIME NC | GPQA-Diamond RP" in md
    assert "AIME CPL | AIME AME (pp) | AIME CMP1v2 (%)" in md  # K = 3 agents here
    assert "RP / EI / NC are not shown" in md and "over 2 seed(s)" in md
    assert "TrueMAD − MAD" in md and "MAD 0.85" in md and "TrueMAD 1.96" in md


# ------------------------------------------------------------------ Tables 10–11, from the metrics up

def process_run(cpl=1.0, ame=0.0, cmp=50.0, rp=5.0, n=10, k=4):
    return {"n": n, "k": k, "cpl": cpl, "ame": ame, "cmp": cmp, "replies": 3, "scored": 3, "rp": rp, "ei": rp,
            "nc": rp}


def test_process_pools_aime_copies_and_reads_the_dynamics_and_rubric_over_the_pool():
    from lmad.paper.dynamics import dynamics
    per_dataset = {"aime-a": {"q1": rounds((0, 0, 1, 0), (1, 1, 1, 1))},
                   "aime-b": {"q1": rounds((1, 1, 1, 0), (1, 0, 0, 0)), "q2": rounds((1, 0, 0, 0), (0, 0, 0, 0))}}
    replies = {"aime-a": [{"rp": 2, "ei": 4, "nc": 6}], "aime-b": [{"rp": 8, "ei": 8, "nc": 8},
                                                                   {"rp": None, "ei": None, "nc": None}]}
    got = tm.process_pooled(per_dataset, replies, BENCH)
    assert list(got) == ["aime"]
    pooled = {("a", "q1"): per_dataset["aime-a"]["q1"], ("b", "q1"): per_dataset["aime-b"]["q1"],
              ("b", "q2"): per_dataset["aime-b"]["q2"]}
    want = dynamics(pooled)  # both q1s count: keys are (dataset, qid)
    assert got["aime"]["n"] == 3 and got["aime"]["k"] == 4
    assert (got["aime"]["cpl"], got["aime"]["ame"], got["aime"]["cmp"]) == (want["cpl"], want["ame"], want["cmp_1vK"])
    assert got["aime"]["cmp"] == 50.0  # two questions start with exactly one right agent; one ends right
    assert (got["aime"]["replies"], got["aime"]["scored"], got["aime"]["rp"]) == (3, 2, 5.0)  # unscored left out


def test_process_rows_mean_sd_one_seed_withheld_rubric_and_an_absent_method():
    cells = {("m", "mad"): {"m/seed0": {"aime": process_run(cpl=1.0, rp=4.0)},
                            "m/seed1": {"aime": process_run(cpl=2.0, rp=6.0)}},
             ("m", "truemad"): {"m/seed0": {"aime": process_run(cpl=math.inf, ame=100.0, cmp=100.0)}}}
    rows = tm.process_rows(cells, ["aime"], ["mad", "truedmad", "truemad"])
    mad, true = rows
    assert (mad["cpl"], mad["cpl_sd"], mad["rp"], mad["seeds"]) == (1.5, pytest.approx(statistics.stdev([1, 2])), 5.0, 2)
    # an infinite CPL is counted, not averaged; one seed has no SD
    assert (true["cpl"], true["cpl_seeds"], true["cpl_inf"], true["ame"], true["ame_sd"]) == (None, 0, 1, 100.0, None)
    md = tm.process_markdown(rows, ["aime"], label, 11)
    assert "∞ in 1 seed(s)" in md and "100.00 ± n/a" in md and "CMP1v3 (%)" in md
    hidden = tm.process_rows(cells, ["aime"], ["mad", "truemad"], rubric_shown=False)
    assert all(r[d] is None for r in hidden for d in ("rp", "ei", "nc")) and hidden[0]["cpl"] == 1.5
    # TrueDMAD and DMAD are absent: no row, no comparison; TrueMAD − MAD is there
    deltas = tm.matched_deltas(rows)
    assert [(d["method"], d["baseline"]) for d in deltas] == [("truemad", "mad")]
    assert deltas[0]["cpl"] is None and deltas[0]["ame"] == 100.0
    assert tm.process_rows({}, ["aime"], ["mad"]) == [] and tm.deltas_markdown([], ["aime"], label, True) == ""


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.lists(st.lists(st.integers(0, 1), min_size=4, max_size=4), min_size=2, max_size=3),
                         min_size=1, max_size=4), min_size=1, max_size=3))
def test_process_cells_stay_in_range_and_between_the_seeds(runs):
    """Any agents' flags over rounds (all wrong, all right), one to three seeds: AME within ±100 points,
    CMP within 0–100 %, CPL non-negative; the mean lies between the seeds' values; one seed has no SD."""
    n_rounds = min(len(q) for qs in runs for q in qs)
    scores = {}
    for s, qs in enumerate(runs):
        per_q = {f"q{i}": [(list(f), int(2 * sum(f) > 4)) for f in q[:n_rounds]] for i, q in enumerate(qs)}
        scores[(f"m/seed{s}", "aime-a", "mad")] = per_q
    cells = tm.process_cells(scores, {}, BENCH)
    (row,) = tm.process_rows(cells, ["aime"], ["mad"])
    per_seed = [run["aime"] for run in cells[("m", "mad")].values()]
    assert row["seeds"] == len(runs) and row["rp"] is None and row["scored"] == 0
    for metric, lo, hi in (("ame", -100, 100), ("cmp", 0, 100), ("cpl", 0, math.inf)):
        vals = [v[metric] for v in per_seed if math.isfinite(v[metric])]
        assert row[f"{metric}_seeds"] == len(vals)
        if vals:
            assert lo - 1e-9 <= row[metric] <= hi and min(vals) - 1e-9 <= row[metric] <= max(vals) + 1e-9
            assert (row[f"{metric}_sd"] is None) == (len(vals) == 1)
        else:
            assert row[metric] is None
