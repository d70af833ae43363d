"""Seeded replicates (config `seeds`): each replicate changes only the call seeds, lives in its own
results folder, and the tables report mean ± sample SD over the replicates."""
import json
import math
import statistics

import polars as pl
import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from conftest import REPO, make_config, scripted_model, snakemake, write_config
from lmad import layout
from lmad.stages.analyze import replicate_rows
from lmad.stats import mean_sd

METHODS = ("cot", "sc", "mad")


@given(st.lists(st.floats(0, 1), min_size=0, max_size=6))
def test_mean_sd_is_the_sample_sd(xs):
    mean, sd = mean_sd(xs)
    if not xs:
        assert (mean, sd) == (None, None)
        return
    assert math.isclose(mean, statistics.fmean(xs), abs_tol=1e-12)
    assert sd is None if len(xs) == 1 else math.isclose(sd, statistics.stdev(xs), abs_tol=1e-9)


@given(st.integers(-3, 40), st.sampled_from(["m", "org-model.v2"]))
def test_a_replicate_run_names_its_backbone_and_seed(seed, model):
    run = layout.run_name(model, seed)
    assert (layout.model_of(run), layout.replicate_of(run)) == (model, seed)
    assert (layout.model_of(model), layout.replicate_of(model)) == (model, None)
    where = layout.parse(layout.predictions(run, "hotpotqa", "cot"))
    assert (where.backbone, where.dataset, where.method) == (run, "hotpotqa", "cot")


def test_replicate_rows_skip_a_missing_cell_and_macro_average_per_replicate():
    summaries = {0: pl.DataFrame({"dataset": ["a", "b"], "method": ["m", "m"], "em": [0.5, 1.0]}),
                 1: pl.DataFrame({"dataset": ["a"], "method": ["m"], "em": [0.25]})}
    rows = {r["dataset"]: r for r in replicate_rows(summaries, "em", ["a", "b"], ["m"])}
    assert rows["a"]["values"] == [0.5, 0.25] and math.isclose(rows["a"]["sd"], statistics.stdev([0.5, 0.25]))
    assert rows["b"]["seeds"] == [0] and rows["b"]["sd"] is None        # one replicate: no spread
    assert rows["Avg."]["values"] == [0.75] and rows["Avg."]["n_replicates"] == 1  # replicate 1 lacks b


def _stats(workdir, run):
    return json.loads((workdir / "logs" / run / "generate" / "proposals.stats.json").read_text())


@pytest.fixture(scope="module")
def replicated(tmp_path_factory):
    """One run at seed 0 without replicates, then the same config with seeds [0, 1]."""
    workdir = tmp_path_factory.mktemp("replicates")
    datasets = {"mmlu": {"source": "local", "path": str(REPO / "data" / "demo" / "mmlu.jsonl"), "n": 10},
                "hotpotqa": {"source": "jsonl", "path": str(REPO / "data" / "demo" / "hotpotqa.jsonl"), "n": 1}}
    config = make_config(workdir, models={"scripted": {**scripted_model(), "responder": "seeded_oracle:respond"}},
                         methods=METHODS, datasets=datasets, debate={"rounds": 1})
    env = {"PYTHONPATH": f"{REPO / 'tests'}:{REPO / 'workflow'}"}
    snakemake(workdir, env=env)
    single = {p.relative_to(workdir / "results" / "scripted"): pl.read_parquet(p)
              for p in (workdir / "results" / "scripted").glob("*/predictions/*.parquet")}
    write_config(workdir, config | {"seeds": [0, 1]})
    snakemake(workdir, env=env)
    return workdir, config, single


def test_the_replicate_at_the_config_seed_repeats_the_single_run_calls(replicated):
    workdir, _, single = replicated
    same, other = _stats(workdir, "scripted/seed0"), _stats(workdir, "scripted/seed1")
    assert same["calls"] > 0 and same["hits"] == same["calls"]          # every call already stored
    assert other["misses"] == other["calls"]                             # new call seeds: new calls
    for rel, frame in single.items():                                    # and the same predictions
        replicate = pl.read_parquet(workdir / "results" / "scripted" / "seed0" / rel)
        assert replicate["replicate"].to_list() == [0] * len(frame) and frame["replicate"].is_null().all(), rel
        assert replicate.drop("replicate").equals(frame.drop("replicate")), rel


def test_replicates_have_their_own_results_and_a_mean_sd_table(replicated):
    workdir, config, _ = replicated
    root = workdir / "results" / "scripted"
    runs = {s: pl.read_parquet(root / f"seed{s}" / "analysis" / "accuracy.parquet") for s in (0, 1)}
    table = pl.read_parquet(root / "analysis" / "replicates.parquet")
    assert set(table["method"]) == set(METHODS)
    for row in table.filter(pl.col("dataset") != "Avg.").to_dicts():
        values = [runs[s].filter((pl.col("dataset") == row["dataset"]) & (pl.col("method") == row["method"]))["em"][0]
                  for s in (0, 1)]
        assert row["seeds"] == [0, 1] and row["values"] == values
        assert math.isclose(row["sd"], statistics.stdev(values), abs_tol=1e-12)
    assert table.filter(pl.col("dataset") == "mmlu")["sd"].max() > 0     # the replicates differ
    md = (root / "analysis" / "replicates.md").read_text()
    assert "2 replicates (seeds 0, 1)" in md and " ± " in md
    t1 = pl.read_csv(workdir / "results" / "paper" / "table1.csv")
    assert t1["backbone"].unique().to_list() == ["scripted"]             # one row block, not one per replicate
    assert "cot_sd" in t1.columns
    assert "mean ± sample SD over the 2 seeded replicates" in (workdir / "results" / "paper" / "table1.md").read_text()
    dynamics = (workdir / "results" / "paper" / "dynamics.md").read_text()
    vote = dynamics.split("## Agent ACC / Vote ACC")[1]
    assert "mean ± sample SD over 2 seeded replicates" in vote
    assert vote.count("| scripted | MAD |") == 1 and " ± " in vote.split("| scripted | MAD |")[1].splitlines()[0]
    manifest = json.loads((workdir / "results" / "manifest.json").read_text())
    assert manifest["seeds"] == [0, 1] and manifest["model_loads"]["scripted"] >= 1
    assert yaml.safe_load((workdir / "config.yaml").read_text())["seeds"] == [0, 1]


def test_one_glob_reads_every_replicate_with_its_keys(replicated, monkeypatch):
    """docs/analysis.md "Reading a whole run": its polars block, run as written on this run's results
    (the single run at seed 0, then replicates 0 and 1), needs no path parsing."""
    workdir = replicated[0]
    doc = (REPO / "docs" / "analysis.md").read_text().split("## Reading a whole run\n", 1)[1]
    block = doc.split("```python\n", 1)[1].split("```", 1)[0]
    monkeypatch.chdir(workdir)
    names: dict = {}
    exec(block, names)
    keys = ["backbone", "replicate", "dataset", "method"]
    questions = {"mmlu": 10, "hotpotqa": 1}
    # rows per (backbone, replicate, dataset, method): the single run's (replicate null) and each replicate's
    want = {("scripted", r, d, m, n) for d, n in questions.items() for m in METHODS for r in (None, 0, 1)}
    for table in (names["predictions"].collect(), names["judgments"].collect()):
        counts = table.group_by(keys).len().rows()
        assert len(counts) == len(want) and set(counts) == want, counts
    assert names["em"].columns == [*keys, "n", "em"] and names["em"]["n"].sum() == 3 * len(METHODS) * 11
    # every table of the run carries the keys, and they are those of its place in the layout
    for path in (workdir / "results").rglob("*.parquet"):
        stored = pl.read_parquet(path)
        assert set(keys) <= set(stored.columns), path
        if "/judge/" in str(path) or path.parent.name == "data":
            continue
        run = layout.parse(path).backbone
        assert set(stored["backbone"]) <= {layout.model_of(run)}, path
        assert set(stored["replicate"]) <= {layout.replicate_of(run)}, path
