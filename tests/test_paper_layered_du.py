"""The layered-disagreement paper's tables (results/paper/layered/, lmad.paper.layered) and Du et al.'s
(results/paper/du/, lmad.paper.du): their edges (0 % and 100 %, one turn, a tone or method absent,
every reply unparsable), their planning by config ``paper.layered`` / ``paper.du``, and scripted runs
that write them."""
import json
import math
import os

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import REPO, make_config, scripted_model, snakemake, write_config
from lmad.disagreement_labels import SELF_REPORT_STEP
from lmad.paper import du
from lmad.paper import layered as ly

ENV = {"PYTHONPATH": os.pathsep.join([str(REPO / "workflow"), str(REPO / "tests")])}
TONED = {"friendly": "mad@friendly", "neutral": "mad", "hostile": "mad@hostile"}

# a turn: its tone, its self-report (None: did not parse) and the blind judge's stance (None: no label)
TURN = st.tuples(st.sampled_from(list(TONED)), st.sampled_from(["full", "partial", "none", None]),
                 st.sampled_from(["agree", "partial", "disagree", None]), st.integers(1, 3))


def _rows(turns):
    reports, labels = [], []
    for i, (tone, agreement, stance, t) in enumerate(turns):
        where = {"backbone": "b", "method": TONED[tone], "dataset": "d", "qid": f"q{i}", "round": t, "agent": 0}
        reports.append(where | {"step": SELF_REPORT_STEP, "parsed": json.dumps(
            {"agreement": agreement, "changed_mind": "no"}) if agreement else ""})
        labels.append(where | {"stance": stance or "", "move": "challenge" if stance else ""})
    return reports, labels


@settings(max_examples=60, deadline=None)
@given(st.lists(TURN, min_size=1, max_size=14), st.sampled_from(["PASSED", "FAILED", "off"]))
def test_layered_tables_edges(turns, status):
    reports, labels = _rows(turns)
    cells = ly.cells(reports, labels, status)
    table2 = {r["rounds"]: r for r in ly.table2_rows(cells)}
    row = table2[ly.ALL_ROUNDS]
    for tone in ly.TONES:
        labelled = [a for t, a, _, _ in turns if t == tone and a]
        assert row[f"{tone}_labelled"] == len(labelled)
        if labelled:  # 0 % and 100 % are shares like any other; one turn is a share of one
            assert row[tone] == sum(a == "full" for a in labelled) / len(labelled)
        else:  # a tone absent, or every report of it unparsable: no share, never 0 %
            assert math.isnan(row[tone])
    both = [row[t] for t in ("friendly", "hostile")]
    assert math.isnan(row["drop_pp"]) == any(math.isnan(x) for x in both)
    if not math.isnan(row["drop_pp"]):
        assert -100 <= row["drop_pp"] <= 100
    # round 1 alone is the first round's turns
    if any(t == 1 for *_, t in turns):
        assert sum(table2[ly.FIRST_ROUND][f"{t}_labelled"] for t in ly.TONES) == sum(
            1 for _, a, _, t in turns if a and t == 1)
    [b] = ly.layer_b_rows(cells)
    if status != "PASSED":
        assert b["ab_pairs"] == 0 and math.isnan(b["ab_exact"]) and math.isnan(b["blind_drop_pp"])
    else:
        assert b["ab_pairs"] == sum(1 for _, a, s, _ in turns if a and s)
        assert math.isnan(b["ab_exact"]) or 0 <= b["ab_exact"] <= 1
    if b["self_drop_pp"] == 0:  # no collapse to compare with: no ratio, never a division by zero
        assert math.isnan(b["collapse_ratio"])
    assert ly.layer_c_rows(cells) == []  # no re-ask
    for text in (ly.table2_markdown(list(table2.values())), ly.layer_b_markdown([b], "line")):
        assert "nan" not in text.lower()


def test_every_reply_unparsable_leaves_every_cell_empty():
    reports, labels = _rows([(tone, None, None, 1) for tone in ly.TONES])
    [row] = [r for r in ly.table2_rows(ly.cells(reports, labels, "PASSED")) if r["rounds"] == ly.ALL_ROUNDS]
    assert all(math.isnan(row[t]) and row[f"{t}_labelled"] == 0 for t in ly.TONES) and math.isnan(row["drop_pp"])
    assert "– (0)" in ly.table2_markdown([row])
    assert ly.table2_markdown([]).count("No self-reported") == 1


def test_jury_counts_only_when_it_passed():
    base = {"backbone": "b", "method_a": "mad", "method_b": "mad@hostile", "pairs": 3, "ties": None, "a_wins": None,
            "b_wins": None, "consistency": 1.0, "unvalidated_pairs": 3}
    [row] = ly.jury_rows([base | {"status": "UNVALIDATED"}])
    assert row["decided"] is None and "| UNVALIDATED | UNVALIDATED | – | – | 3 |" in ly.jury_markdown([row], {})
    [row] = ly.jury_rows([base | {"status": "PASSED", "ties": 1, "a_wins": 0, "b_wins": 0, "unvalidated_pairs": 0}])
    assert row["decided"] == 1 and "| 1 / 1 |" in ly.jury_markdown([row], {})


# ---------------------------------------------------------------------------------------- Du et al.

SCORED = st.lists(st.tuples(st.sampled_from(["b1", "b2"]), st.sampled_from(["d1", "d2"]),
                            st.sampled_from(["cot", "sc", "mad"]), st.sampled_from([0.0, 1.0, None])), max_size=20)


@settings(max_examples=60, deadline=None)
@given(SCORED, st.lists(st.sampled_from(["cot", "sc", "mad"]), unique=True))
def test_du_accuracy_edges(scored, methods):
    rows = du.accuracy_rows(du.counts([{"backbone": b, "dataset": d, "method": m, "score": s}
                                       for b, d, m, s in scored]), ["b1", "b2"], ["d1", "d2"], methods)
    # a method absent from the run has no row; every present one a row per dataset and its Avg.
    assert {r["method"] for r in rows} == set(methods) and len(rows) == 2 * 3 * len(methods)
    for r in rows:
        if r["dataset"] == du.AVG:
            cells = [x["accuracy"] for x in rows if (x["backbone"], x["method"]) == (r["backbone"], r["method"])
                     and x["dataset"] != du.AVG and x["questions"]]
            assert math.isnan(r["accuracy"]) == (not cells)
            if cells:
                assert math.isclose(r["accuracy"], sum(cells) / len(cells))
            continue
        mine = [s for b, d, m, s in scored if (b, d, m) == (r["backbone"], r["dataset"], r["method"])]
        assert r["questions"] == len(mine)
        if mine:  # an unscored prediction counts as wrong; 0 % and 100 % alike
            assert r["accuracy"] == 100 * sum(s or 0 for s in mine) / len(mine)
        else:
            assert math.isnan(r["accuracy"]) and du.cell_text(r) == "–"
    text = du.accuracy_markdown(rows, ["d1", "d2"], {}, 1)
    assert "nan" not in text.lower()


@given(st.lists(st.one_of(st.floats(0, 1), st.just(math.nan)), min_size=1, max_size=4), st.integers(1, 6))
def test_du_scaling_edges(accs, agents):
    row = {"backbone": "b", "dataset": "d", "method": "mad"}
    for t, a in enumerate(accs):
        row |= {f"agent_acc_r{t}": a, f"majority_acc_r{t}": a}
    got = du.scaling_rows([row, row | {"method": "sc"}], {"b": agents})
    assert [r["round"] for r in got] == [t for t, a in enumerate(accs) if not math.isnan(a)]
    assert all(r["agents"] == agents and 0 <= r["majority_acc"] <= 100 for r in got)
    assert "nan" not in du.scaling_markdown(got, ["d"], {}).lower()


# ----------------------------------------------------------------------------- planning and runs

def _dry(workdir) -> str:
    out = snakemake(workdir, "-n", "--forceall", env=ENV)
    return out.stdout + out.stderr


def test_layered_tables_through_snakemake(workdir):
    config = make_config(workdir, n=2, methods=["mad", "mad@hostile", "mad@friendly"],
                         models={"scripted": {"backend": "scripted", "model": "scripted",
                                              "responder": "pushback_oracle:respond"}},
                         disagreement={"self_report": True, "pushback": True, "battery_questions": 2,
                                       "persistence": 1.0},
                         jury={"pair": ["mad", "mad@hostile"]}, debate={"rounds": 1},
                         paper={"layered": True})
    config["datasets"] = {d: config["datasets"][d] for d in ("strategyqa",)}
    write_config(workdir, config)
    out = [f"results/paper/layered/{n}.{e}" for n in ("table2", "layer_b", "layer_c", "jury") for e in ("csv", "md")]
    dry = _dry(workdir)
    assert all(p in dry for p in out) and "results/paper/layered/layer_d" not in dry
    snakemake(workdir, *out, env=ENV)
    t2 = pl.read_csv(workdir / "results/paper/layered/table2.csv")
    assert t2.columns == ly.TABLE2_COLUMNS
    # one dataset, one debating base method, two scopes; 2 questions x 3 agents x 1 round per tone
    assert t2.height == 2 and set(t2["rounds"].cast(pl.Utf8)) == {"all", "1"}
    assert t2.row(0, named=True)["friendly_labelled"] == 6 and t2.row(0, named=True)["neutral_labelled"] == 6
    b = pl.read_csv(workdir / "results/paper/layered/layer_b.csv")
    assert b.columns == ly.LAYER_B_COLUMNS and b["b_status"].to_list() == ["PASSED"] and b["ab_pairs"][0] == 18
    c = pl.read_csv(workdir / "results/paper/layered/layer_c.csv")
    # persistence 1.0: every turn of the toned methods re-asked (friendly and hostile), round 1 and pooled
    assert c.columns == ly.LAYER_C_COLUMNS and sorted(c["tone"].to_list()) == ["friendly"] * 2 + ["hostile"] * 2
    assert set(c["c_pairs"]) == {6}
    jury = pl.read_csv(workdir / "results/paper/layered/jury.csv")
    assert jury.columns == ly.JURY_COLUMNS and jury["backbone"].to_list() == ["scripted"]
    md = (workdir / "results/paper/layered/table2.md").read_text()
    assert "| scripted | strategyqa | mad | all |" in md and "Drop (pp)" in md
    # off by default: no layered table planned
    config["paper"] = {}
    write_config(workdir, config)
    assert "results/paper/layered/" not in _dry(workdir)


def test_du_tables_through_snakemake(workdir):
    """Two backbones: one model debating with three agents, and a committee of two different models:
    the accuracy, scaling (agent counts 2 and 3) and cross-model tables."""
    config = make_config(workdir, n=2, methods=["cot", "sc", "mad"],
                         models={"scripted": scripted_model(), "other": scripted_model("other")},
                         backbones=["scripted", "duo"],
                         committees={"duo": {"members": [{"model": "scripted"}, {"model": "other"}]}},
                         debate={"rounds": 2}, paper={"du": True, "columns": ["cot", "sc", "mad"],
                                                      "baselines": ["cot", "sc"]})
    config["datasets"] = {d: config["datasets"][d] for d in ("hotpotqa", "strategyqa")}
    write_config(workdir, config)
    names = ("accuracy", "scaling", "cross_model")
    out = [f"results/paper/du/{n}.{e}" for n in names for e in ("csv", "md")]
    assert all(p in _dry(workdir) for p in out)
    snakemake(workdir, *out, env=ENV)
    acc = pl.read_csv(workdir / "results/paper/du/accuracy.csv")
    assert acc.columns == du.ACCURACY_COLUMNS
    # 2 backbones x 3 methods x (2 datasets + Avg.)
    assert acc.height == 18 and set(acc.filter(pl.col("dataset") != du.AVG)["questions"]) == {2}
    md = (workdir / "results/paper/du/accuracy.md").read_text()
    assert "| scripted | Single agent |" in md and "| duo | Multi-agent debate |" in md
    scaling = pl.read_csv(workdir / "results/paper/du/scaling.csv")
    assert scaling.columns == du.SCALING_COLUMNS and set(scaling["agents"]) == {2, 3}
    assert set(scaling["round"]) <= {0, 1, 2} and 0 in set(scaling["round"])
    assert "## By number of agents (round 1)" in (workdir / "results/paper/du/scaling.md").read_text()
    cross = pl.read_csv(workdir / "results/paper/du/cross_model.csv")
    assert cross.columns == du.CROSS_COLUMNS
    assert set(zip(cross["backbone"], cross["debate"])) == {("scripted", "alone"), ("duo", "jointly")}
    assert "scripted + other" in (workdir / "results/paper/du/cross_model.md").read_text()
    # one backbone: neither overlay's table is planned
    config["backbones"], config["committees"] = ["scripted"], {}
    write_config(workdir, config)
    dry = _dry(workdir)
    assert "results/paper/du/accuracy.md" in dry and "du/scaling" not in dry and "du/cross_model" not in dry
