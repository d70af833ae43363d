"""Datasets are named freely; the benchmark is a field (config ``datasets.<name>.type``), so
a dev split can sit beside the test split of the same benchmark and is scored by its rules."""
from lmad.answers.official import score
from lmad.schemas import read_table

from conftest import REPO, make_config, snakemake, write_config


def test_two_samples_of_one_benchmark_run_side_by_side_and_score_by_their_type(tmp_path):
    config = make_config(tmp_path, n=2)
    demo = REPO / "data" / "demo"
    config["datasets"] = {
        "hotpotqa": {"source": "jsonl", "path": str(demo / "hotpotqa.jsonl"), "n": 2},
        "hotpotqa-dev": {"type": "hotpotqa", "source": "jsonl", "path": str(demo / "hotpotqa.jsonl"), "n": 1},
        "sqa": {"type": "strategyqa", "source": "jsonl", "path": str(demo / "strategyqa.jsonl"), "n": 2},
    }
    write_config(tmp_path, config)
    snakemake(tmp_path)
    for name, benchmark, n in (("hotpotqa", "hotpotqa", 2), ("hotpotqa-dev", "hotpotqa", 1), ("sqa", "strategyqa", 2)):
        questions = read_table("questions", tmp_path / f"results/data/{name}.parquet")
        assert questions["dataset"].to_list() == [name] * n and questions["benchmark"].to_list() == [benchmark] * n
    judged = read_table("judgments", tmp_path / "results/scripted/sqa/judgments.parquet")
    for row in judged.to_dicts():   # StrategyQA's yes/no rules, chosen by type, not by name
        assert (row["em"], row["f1"]) == score(row["prediction"], [row["gold"], *row["aliases"]], "yes_no")
    table = (tmp_path / "results/scripted/analysis/table.md").read_text()
    assert "hotpotqa-dev" in table and "sqa" in table
