"""Property tests of the analysis and paper layer: on every valid result table, every
function a rule of rules/analysis.smk and rules/paper.smk calls finishes; every interval contains
its point estimate and lies in range; every macro average is the mean of its cells; every table
has its columns and rows; every figure file is written. Each shrunk failure the properties found
is a plain regression test at the end. Profile: tests/conftest.py ("ci", derandomized, bounded)."""
import csv
import json
import math
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from analysis_data import DATASETS, DEBATE, METHODS, PATTERNS, Run, write_run, write_validation
from lmad.paper.figures import accuracy_bar
from lmad.paper.tables import AVG
from lmad.schemas import read_table
from lmad.stats import paired_bootstrap_diff, wilson_interval
from lmad.stages import analyze as A
from lmad.stages import paper as P

COLUMNS = ["cot", "sc", "consensus", "mad", "dmad", "lmad"]       # config paper.columns default
BASELINES = ["cot", "sc", "consensus", "mad", "dmad"]             # config paper.baselines default
EPS = 1e-9
# examples of the file-writing properties, as a share of the profile's max_examples ("ci": 50)
EXAMPLES = settings.default.max_examples


@st.composite
def runs(draw, max_n=200):
    backbones = [f"b{i}" for i in range(draw(st.integers(1, 3)))]
    datasets = draw(st.lists(st.sampled_from(DATASETS), min_size=1, max_size=4, unique=True))
    methods = draw(st.lists(st.sampled_from(METHODS), min_size=1, max_size=len(METHODS), unique=True))
    n = {d: draw(st.integers(1, max_n)) for d in datasets}
    pattern = {(b, d, m): draw(st.sampled_from(PATTERNS)) for b in backbones for d in datasets for m in methods}
    missing = (draw(st.none() | st.tuples(st.sampled_from(datasets), st.sampled_from(methods)))
               if len(methods) > 1 else None)
    return Run(backbones, datasets, methods, n, pattern, missing, agents=draw(st.integers(2, 4)),
               rounds={m: draw(st.integers(0, 3)) for m in methods if m in DEBATE}, seed=draw(st.integers(0, 2**16)),
               metric=draw(st.sampled_from(["auto", "judge", "em", "f1"])), judge_passed=draw(st.booleans()))


def oracle_acc(run: Run, data: dict, b: str, d: str, m: str) -> float | None:
    """The headline metric (%) of a cell from the generated scores: every answer counts and an
    unscored one is incorrect (judge accuracy); the fixture's EM and F1 equal that 0/1 score, so
    the value is the same whichever metric the run shows."""
    s = data["correct"].get((b, d, m))
    return 100 * sum(c or 0.0 for c in s) / len(s) if s else None


def headline_of(run: Run) -> str:
    return ("judge" if run.judge_passed else "em") if run.metric == "auto" else run.metric


def rows_of(path) -> list[dict]:
    return list(csv.DictReader(Path(path).open()))


def num(text: str) -> float | None:
    return None if text in ("", "–") else float(text)


def in_interval(lo, point, hi, low, high):
    assert low - EPS <= lo <= point + EPS and point - EPS <= hi <= high + EPS, (lo, point, hi)


# ---- the analysis rules (per backbone) ----

def check_analyze(run: Run, data: dict, tmp: Path, resamples: int):
    for b in run.backbones:
        out = tmp / "results" / b / "analysis"
        out.mkdir(parents=True, exist_ok=True)
        A.analyze(data["judgments"][b], data["predictions"][b], data["validation"], str(out / "accuracy.parquet"),
                  str(out / "table.csv"), str(out / "table.md"), backbone=b, methods=run.methods,
                  datasets=run.datasets, bootstrap_resamples=resamples, metric=run.metric, seed=0, provenance={})
        summary = read_table("accuracy", out / "accuracy.parquet")     # passes its schema
        for r in summary.to_dicts():
            want = oracle_acc(run, data, b, r["dataset"], r["method"])
            assert (r["judge_acc"] is None) == (want is None)
            if want is not None:
                assert abs(100 * r["judge_acc"] - want) < 1e-9
        table = rows_of(out / "table.csv")
        assert [r["dataset"] for r in table] == [*run.datasets, "Avg."]
        for m in run.methods:   # the table shows two decimals: compare with the exact cells
            cells = [oracle_acc(run, data, b, d, m) for d in run.datasets]
            shown = [num(r[m]) for r in table]
            assert [c is None for c in cells] == [c is None for c in shown[:-1]]
            assert all(c is None or abs(c - x) <= 0.005 + EPS for c, x in zip(cells, shown))
            if any(c is None for c in cells):
                assert shown[-1] is None
            else:
                assert abs(shown[-1] - np.mean(cells)) <= 0.005 + EPS, (m, cells, shown)
        for r in rows_of(out / "delta.csv"):
            lo, delta, hi = float(r["ci_lo"]), float(r["delta"]), float(r["ci_hi"])
            in_interval(lo, delta, hi, -1, 1)
            assert abs(delta - (float(r["avg"]) - float(r["best_other_avg"]))) < 1e-9
        md = (out / "table.md").read_text()
        assert md.startswith({"judge": "# Judge acc.", "em": "# EM", "f1": "# F1"}[headline_of(run)])
        assert ("FAILED validation" in md.split("|")[0]) is (not run.judge_passed)
        assert {r["metric"] for r in table} == {headline_of(run)}


# ---- the paper rules ----

def check_table1(run: Run, data: dict, out: Path, resamples: int):
    columns = [m for m in COLUMNS if m in run.methods]
    P.table1(sum(data["judgments"].values(), []), data["validation"], str(out / "table1.csv"), str(out / "table1.md"),
             str(out / "table1.tex"), backbones=run.backbones, datasets=run.datasets, columns=columns,
             baselines=BASELINES, target="lmad", bootstrap_resamples=resamples, seed=0, metric=run.metric,
             provenance={})
    rows = rows_of(out / "table1.csv")
    if not columns:
        assert "Table 1 is empty" in (out / "table1.md").read_text()
        return
    assert [(r["backbone"], r["dataset"]) for r in rows] == [(b, d) for b in run.backbones
                                                             for d in [*run.datasets, AVG]]
    for b in run.backbones:
        block = [r for r in rows if r["backbone"] == b]
        for m in columns:
            cells = [num(r[m]) for r in block[:-1]]
            for d, c in zip(run.datasets, cells):
                want = oracle_acc(run, data, b, d, m)
                assert (c is None) == (want is None) and (c is None or abs(c - want) < 1e-9)
                assert c is None or 0 <= c <= 100
            avg = num(block[-1][m])
            assert avg is None if None in cells else abs(avg - float(np.mean(cells))) < 1e-9
        for r in block:
            delta, strongest = num(r["delta"]), r["strongest_baseline"]
            vals = {m: num(r[m]) for m in BASELINES if m in columns and num(r[m]) is not None}
            top = max(vals.values(), default=None)   # ties: the earlier baseline
            assert strongest == next((m for m in BASELINES if m in vals and vals[m] == top), "")
            if delta is not None:
                assert abs(delta - (float(r["lmad"]) - float(r[strongest]))) < 1e-9
            if r["dataset"] == AVG and delta is not None:   # Δ shown -> its CI is shown and contains it
                in_interval(float(r["delta_ci_lo"]), delta, float(r["delta_ci_hi"]), -100, 100)


def check_table2(run: Run, data: dict, out: Path):
    traces = sum(data["traces"].values(), [])
    P.table2(sum(data["judgments"].values(), []), data["validation"], traces, data["questions"],
             str(out / "table2.csv"), str(out / "table2.md"), str(out / "table2.tex"),
             str(out / "table2_checks.csv"), backbones=run.backbones, datasets=run.datasets,
             metric=run.metric, provenance={})
    md = (out / "table2.md").read_text()
    rows = rows_of(out / "table2.csv")
    if "lmad" not in run.methods:
        assert "Table 2 is empty: this run has no LMAD (Strict) trace" in md
    assert ("Table 2 is empty" in md) == all(int(r["n"]) == 0 for r in rows)
    for c in rows_of(out / "table2_checks.csv"):     # a guard's rejections are a subset of its repairs
        assert 0 <= int(c["rejected_with_gold"]) <= int(c["rejected"]) <= int(c["repairs"])
    if "lmad" not in run.methods:
        assert rows_of(out / "table2_checks.csv") == []
    for r in rows:
        vals = [num(r[m]) for m in P.GATE_METHODS if m in r]
        assert all(v is None or 0 <= v <= 100 for v in vals)
    for b in run.backbones:
        block = [r for r in rows if r["backbone"] == b]
        if not block:
            continue
        assert [r["dataset"] for r in block] == [*run.datasets, "Macro Avg."]
        for m in P.GATE_METHODS:
            cells = [num(r[m]) for r in block[:-1] if num(r[m]) is not None]
            macro = num(block[-1][m])
            assert (macro is None) == (not cells) and (macro is None or abs(macro - np.mean(cells)) < 1e-9)


def check_cost(run: Run, data: dict, out: Path):
    preds = sum(data["predictions"].values(), [])
    P.cost_table(preds, str(out / "cost.csv"), str(out / "cost.md"), backbones=run.backbones,
                 datasets=run.datasets, methods=run.methods, provenance={})
    frame = pl.concat([pl.read_parquet(p).with_columns(pl.lit(Path(p).parts[-4]).alias("backbone")) for p in preds])
    for r in rows_of(out / "cost.csv"):
        sub = frame.filter((pl.col("backbone") == r["backbone"]) & (pl.col("method") == r["method"]))
        per = sub.group_by("dataset").agg(pl.col("calls").cast(pl.Float64).mean())["calls"].to_list()
        assert abs(float(r["calls_per_q"]) - float(np.mean(per))) < 1e-9


def check_headroom(run: Run, data: dict, out: Path):
    P.headroom_table(data["questions"], data["proposals"], sum(data["judgments"].values(), []), data["validation"],
                     str(out / "headroom.csv"), str(out / "headroom.md"), backbones=run.backbones,
                     methods=run.methods, metric=run.metric, provenance={})
    rows = rows_of(out / "headroom.csv")
    if not [m for m in run.methods if m != "cot"]:
        assert "no headroom" in (out / "headroom.md").read_text().lower()
    rates = ["vote_acc", "hit_rate", "headroom", "recovered", "new_correct", "damage", "final_em"]
    for r in rows:
        assert all(0 <= float(r[c]) <= 100 for c in rates)
        assert abs(float(r["gain"]) - (float(r["recovered"]) + float(r["new_correct"]) - float(r["damage"]))) < 1e-9
    for r in (r for r in rows if r["dataset"] == AVG):
        cells = [float(x["final_em"]) for x in rows if x["dataset"] != AVG and x["backbone"] == r["backbone"]
                 and x["method"] == r["method"]]
        assert abs(float(r["final_em"]) - np.mean(cells)) < 1e-9


def check_dynamics(run: Run, data: dict, out: Path, figures: bool):
    rounds = sum(data["rounds"].values(), [])
    drawn = {f"rounds_{ext}": str(out / f"rounds.{ext}") for ext in ("png", "pdf")} if figures else {}
    P.dynamics_table(data["questions"], rounds, str(out / "dynamics.csv"), str(out / "dynamics.md"),
                     backbones=run.backbones, provenance={}, **drawn)
    md = (out / "dynamics.md").read_text()
    assert ("No debate method in this run" in md) == (not rounds)
    for r in rows_of(out / "dynamics.csv"):
        for k, v in r.items():
            if k.startswith(("agent_acc_r", "majority_acc_r", "final_acc_", "cmp_")) and v not in ("", "NaN", "nan"):
                assert 0 <= float(v) <= 100, (k, v)


def check_viewer(run: Run, data: dict, out: Path):
    for b in run.backbones:
        html = out / "viewer" / f"{b}.html"
        P.viewer(data["questions"], data["judgments"][b], data["validation"], data["traces"][b], data["rounds"][b],
                 str(html), metric=run.metric, provenance={})
        text = html.read_text()
        blob = text.split('id="data">', 1)[1].split("</script>", 1)[0]
        assert len(json.loads(blob)["questions"]) == sum(run.n.values())


def check_figures(run: Run, data: dict, tmp: Path):
    out = tmp / "results" / "paper"
    judgments, preds = sum(data["judgments"].values(), []), sum(data["predictions"].values(), [])
    P.figures(judgments, data["validation"], preds, data["questions"], sum(data["traces"].values(), []),
              backbones=run.backbones, datasets=run.datasets, methods=run.methods, metric=run.metric,
              trace_questions=2, provenance={},
              **{f"{f}_{ext}": str(out / f"{f}.{ext}") for f in P.FIGURES for ext in ("png", "pdf")})
    names = ["accuracy", "pareto", "rounds", "lmad_trace"]  # rounds: check_dynamics's
    for b in run.backbones:
        a = tmp / "results" / b / "analysis"
        A.plot_accuracy(str(a / "accuracy.parquet"), data["validation"], str(a / "accuracy.png"),
                        str(a / "accuracy.pdf"), methods=run.methods, datasets=run.datasets, metric=run.metric,
                        provenance={})
        assert (a / "accuracy.png").read_bytes()[:4] == b"\x89PNG"
    for name in names:
        assert (out / f"{name}.png").read_bytes()[:4] == b"\x89PNG", name
        assert (out / f"{name}.pdf").read_bytes()[:4] == b"%PDF", name


def check_run(run: Run, tmp: Path, figures: bool, resamples: int = 50):
    data = write_run(run, tmp)
    out = tmp / "results" / "paper"
    out.mkdir(parents=True, exist_ok=True)
    check_analyze(run, data, tmp, resamples)
    check_table1(run, data, out, resamples)
    check_table2(run, data, out)
    check_cost(run, data, out)
    check_headroom(run, data, out)
    check_dynamics(run, data, out, figures)
    check_viewer(run, data, out)
    if figures:
        check_figures(run, data, tmp)


# ---- properties ----

@given(k=st.integers(0, 10_000), extra=st.integers(0, 10_000))
def test_wilson_interval_contains_the_estimate_within_0_1(k, extra):
    n = k + extra
    if n == 0:
        assert all(math.isnan(x) for x in wilson_interval(0, 0))
        return
    lo, hi = wilson_interval(k, n)
    assert 0.0 <= lo <= k / n <= hi <= 1.0
    assert (lo == 0.0) == (k == 0) and (hi == 1.0) == (k == n)
    p, below, above = accuracy_bar(float(k), n)
    assert below >= 0 and above >= 0 and 0 <= p - below and p + above <= 100


@given(st.lists(st.tuples(st.sampled_from([1.0, 0.0, math.nan]), st.sampled_from([1.0, 0.0, math.nan])),
                min_size=1, max_size=60), st.lists(st.sampled_from([1.0, 0.0]), min_size=1, max_size=30),
       st.integers(1, 300), st.integers(0, 2**16))
def test_paired_bootstrap_interval_contains_the_difference(pairs, other, resamples, seed):
    a = {"d1": np.array([p[0] for p in pairs]), "d2": np.array(other)}
    b = {"d1": np.array([p[1] for p in pairs]), "d2": np.array(other[::-1])}
    if np.isnan(a["d1"]).all() or np.isnan(b["d1"]).all():
        with pytest.raises(ValueError, match="no question scored"):
            paired_bootstrap_diff(a, b, n_resamples=resamples, seed=seed)
        return
    r = paired_bootstrap_diff(a, b, n_resamples=resamples, seed=seed)
    want = np.mean([np.nanmean(a[d]) - np.nanmean(b[d]) for d in ("d1", "d2")])
    assert abs(r["diff"] - want) < 1e-12
    in_interval(r["lo"], r["diff"], r["hi"], -1, 1)


@settings(max_examples=2 * EXAMPLES // 5)
@given(runs())
def test_every_analysis_and_paper_table_on_any_valid_run(tmp_path_factory, run):
    check_run(run, tmp_path_factory.mktemp("run"), figures=False)


@settings(max_examples=max(1, EXAMPLES // 12))
@given(runs(max_n=40))
def test_every_figure_on_any_valid_run(tmp_path_factory, run):
    data = write_run(run, tmp := tmp_path_factory.mktemp("fig"))
    check_analyze(run, data, tmp, 20)
    check_dynamics(run, data, tmp / "results" / "paper", figures=True)
    check_figures(run, data, tmp)


# ---- regression tests: each shrunk failure the properties found ----

def test_wilson_bounds_are_exact_at_100_and_0_percent():
    # closed form: wilson(4, 4) upper = 0.9999999999999999 (negative yerr), wilson(32, 32) = 1.0000000000000002
    assert wilson_interval(4, 4)[1] == 1.0 and wilson_interval(32, 32)[1] == 1.0
    assert wilson_interval(0, 4)[0] == 0.0
    assert accuracy_bar(4.0, 4) == (100.0, pytest.approx(48.989, abs=1e-3), 0.0)
    assert accuracy_bar(0.0, 4)[:2] == (0.0, 0.0)
    assert math.isnan(accuracy_bar(0.0, 0)[0])


def test_accuracy_figure_with_a_100_and_a_0_percent_cell(tmp_path):
    # the reported crash: ValueError: 'yerr' must not contain negative values
    from lmad.paper import figures

    from lmad.headline import headline

    judged = pl.DataFrame({"backbone": "b", "dataset": "hotpotqa", "method": ["cot"] * 4 + ["sc"] * 4,
                           "score": [1.0] * 4 + [0.0] * 4})
    validation = read_table("judge_validation", write_validation(tmp_path, True)).row(0, named=True)
    figures.accuracy(judged, str(tmp_path / "a.png"), str(tmp_path / "a.pdf"), ["b"], ["hotpotqa"], ["cot", "sc"],
                     headline("auto", validation))
    assert (tmp_path / "a.png").read_bytes()[:4] == b"\x89PNG"


def test_bootstrap_interval_contains_the_difference_with_one_resample():
    r = paired_bootstrap_diff({"d": np.array([1.0, 1.0])}, {"d": np.array([1.0, 0.0])}, n_resamples=1, seed=0)
    assert r["lo"] <= r["diff"] == 0.5 <= r["hi"]


def test_bootstrap_is_of_the_difference_table1_shows_when_answers_are_unscored():
    # Table 1: A = 1/2 = 50 %, B = 1/1 = 100 % -> Δ −50; the CI was [0, 0] (pairs with an unscored side dropped)
    r = paired_bootstrap_diff({"d": np.array([1.0, 0.0])}, {"d": np.array([1.0, np.nan])}, n_resamples=200)
    assert r["diff"] == -0.5 and r["lo"] <= -0.5 <= r["hi"]


def edge_run(tmp_path, datasets, methods, n, pattern, **kw):
    run = Run(["b0"], datasets, methods, n, {("b0", d, m): pattern.get((d, m), "mixed") for d in datasets
                                             for m in methods}, **kw)
    return run, write_run(run, tmp_path)


def test_analyze_a_method_with_no_scored_answer(tmp_path):
    # ValueError: macro_average of no datasets (when unscored answers were left out; now they count as incorrect)
    run, data = edge_run(tmp_path, ["hotpotqa"], ["cot"], {"hotpotqa": 1}, {("hotpotqa", "cot"): "unscored"},
                         metric="judge")
    check_analyze(run, data, tmp_path, 20)
    assert rows_of(tmp_path / "results/b0/analysis/table.csv")[-1]["cot"] == "0.00"


def test_analyze_avg_counts_an_unscored_dataset_as_incorrect(tmp_path):
    # Avg. was 100.00: the mean of the one dataset that had a value
    run, data = edge_run(tmp_path, ["hotpotqa", "2wikimultihopqa"], ["cot"], {"hotpotqa": 2, "2wikimultihopqa": 1},
                         {("hotpotqa", "cot"): "correct", ("2wikimultihopqa", "cot"): "unscored"}, metric="judge")
    check_analyze(run, data, tmp_path, 20)
    assert [r["cot"] for r in rows_of(tmp_path / "results/b0/analysis/table.csv")] == ["100.00", "0.00", "50.00"]


@pytest.mark.parametrize("methods", [["cot"], ["lmad-concrete", "cot"]])
def test_table2_says_it_is_empty_without_a_strict_lmad_trace(tmp_path, methods):
    # ["cot"]: polars ColumnNotFoundError "method"; ["lmad-concrete", "cot"]: rows of n = 0 and no word why
    run, data = edge_run(tmp_path, ["hotpotqa"], methods, {"hotpotqa": 2}, {})
    out = tmp_path / "paper"
    check_table2(run, data, out)
    assert "Table 2 is empty: this run has no LMAD (Strict) trace" in (out / "table2.md").read_text()


def test_table1_says_it_is_empty_without_a_table1_method(tmp_path):
    # a header-only table
    run, data = edge_run(tmp_path, ["2wikimultihopqa"], ["lmad-concrete"], {"2wikimultihopqa": 3}, {})
    check_table1(run, data, tmp_path, 20)


def test_dynamics_says_there_is_no_debate_method(tmp_path):
    # a header-only table
    run, data = edge_run(tmp_path, ["hotpotqa"], ["lmad"], {"hotpotqa": 1}, {})
    check_dynamics(run, data, tmp_path, figures=True)
    assert (tmp_path / "rounds.pdf").read_bytes()[:4] == b"%PDF"


def test_dynamics_curve_of_a_method_has_only_its_own_rounds(tmp_path):
    # MAD (1 round) was shown with Consensus's rounds 2..3 as "–/–"
    run, data = edge_run(tmp_path, ["hotpotqa"], ["mad", "consensus"], {"hotpotqa": 3}, {},
                         rounds={"mad": 1, "consensus": 3})
    check_dynamics(run, data, tmp_path, figures=False)
    md = (tmp_path / "dynamics.md").read_text()
    mad = next(line for line in md.splitlines() if "| MAD |" in line)
    assert mad.split("|")[3].count("→") == 1 and "–/–" not in mad


def test_trace_figure_without_an_lmad_trace(tmp_path):
    # polars ColumnNotFoundError "method" in select_trace_questions
    run, data = edge_run(tmp_path, ["hotpotqa"], ["cot"], {"hotpotqa": 1}, {})
    P.figures(data["judgments"]["b0"], data["validation"], [], data["questions"], [], backbones=run.backbones,
              datasets=run.datasets, methods=run.methods, metric=run.metric, trace_questions=2, provenance={},
              lmad_trace_png=str(tmp_path / "t.png"), lmad_trace_pdf=str(tmp_path / "t.pdf"))
    assert (tmp_path / "t.pdf").read_bytes()[:4] == b"%PDF"


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(min_value=0, max_value=100, allow_nan=False), min_size=1, max_size=12), st.randoms())
def test_macro_average_does_not_depend_on_dataset_order(values, rnd):
    """group_by hands datasets over in any order; the same run must print the same digits."""
    from lmad.stats import macro_average

    shuffled = values[:]
    rnd.shuffle(shuffled)
    assert macro_average({f"d{i}": v for i, v in enumerate(values)}) == \
        macro_average({f"d{i}": v for i, v in enumerate(shuffled)})
