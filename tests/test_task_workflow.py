"""The task families through the workflow (scripted backend): CoT, SC, MAD, TrueMAD and LMAD on
a numeric, an expression and a choice set. Every agent gives the same answer in another surface
form (tests/typed_oracle.py), so a vote, a consensus stop or LMAD's agreement stop that compared
strings instead of the type's canonical answers would split them."""
import polars as pl
import pytest

from conftest import REPO, make_config, scripted_model, snakemake

# a numeric, an expression and a choice set, and a choice set whose options the loader shuffles
SETS = {"gsm8k": "gsm8k.jsonl", "math500": "math500.jsonl", "mmlu": "mmlu.jsonl", "gpqa-diamond": "gpqa-diamond.csv"}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("tasks")
    datasets = {d: {"source": "local", "path": str(REPO / "data" / "demo" / f), "n": 3} for d, f in SETS.items()}
    make_config(workdir, models={"oracle": {**scripted_model(), "responder": "typed_oracle:respond"}},
                backbones=["oracle"], methods=("cot", "sc", "mad", "truemad", "lmad"), datasets=datasets,
                lmad={"iterations": 2, "local_rounds": 1}, debate={"rounds": 1})
    snakemake(workdir, env={"PYTHONPATH": f"{REPO / 'tests'}:{REPO / 'workflow'}"})
    return workdir


def table(workdir, pattern: str) -> pl.DataFrame:
    return pl.concat([pl.read_parquet(p) for p in sorted((workdir / "results").glob(pattern))], how="diagonal_relaxed")


def test_every_method_reads_every_surface_form_as_one_answer(run):
    preds = table(run, "oracle/*/predictions/*.parquet")
    assert set(preds["method"]) == {"cot", "sc", "mad", "truemad", "lmad"}
    expected = {"gsm8k": "1/2", "math500": "1/2", "mmlu": "B", "gpqa-diamond": "B"}
    for row in preds.to_dicts():   # the canonical answer, whichever agent's form won the vote
        assert row["prediction"] == expected[row["dataset"]], row
    lmad = preds.filter(pl.col("method") == "lmad")
    assert set(lmad["stop_reason"]) == {"agreement"}   # no conflict to localize: the agents agree


def test_rule_scored_types_skip_the_judge_and_fill_correct(run):
    judged = table(run, "oracle/*/judgments.parquet")
    assert set(judged["judge_verdict"]) == {"rule"} and judged["judge_correct"].null_count() == len(judged)
    for choice in ("mmlu", "gpqa-diamond"):
        sub = judged.filter(pl.col("dataset") == choice)
        assert (sub["correct"] == (sub["gold"] == "B")).all()
    shuffled = pl.read_parquet(run / "results" / "data" / "gpqa-diamond.parquet")
    assert all(sorted(o) == list(range(len(o))) for o in shuffled["choice_order"])   # the recorded permutation
    assert (judged["em"] == judged["correct"].cast(pl.Float64)).all()
    # Table 1's caption says what a rule-scored cell is, under the headline metric's label
    assert "a cell is the answer type's own accuracy" in (run / "results" / "paper" / "table1.md").read_text()
