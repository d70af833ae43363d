"""Per-backbone question counts (config ``backbone_n``): a nested subset of the dataset's
sample, read by every stage of that backbone and of no other."""
import re

from conftest import DATASETS, make_config, scripted_model, snakemake

from lmad.data.loaders import select
from lmad.schemas import read_table, write_table
from lmad.stages.prepare import backbone_questions


def _q(qid):
    return {"qid": qid, "dataset": "hotpotqa", "benchmark": "hotpotqa",
            "question": "?", "context": [], "answer": "a", "aliases": [],
            "qtype": "bridge", "supporting_facts": [], "source": "t"}


def test_subset_is_the_first_n_of_the_seeded_ranking(tmp_path):
    rows = [_q(f"q{i:02d}") for i in range(20)]
    full = tmp_path / "full.parquet"
    write_table("questions", rows, full)
    out = {}
    for n in (3, 7):
        path = tmp_path / f"n{n}.parquet"
        backbone_questions(str(full), str(full), str(path), n, 0, {})
        out[n] = set(read_table("questions", path)["qid"])
        assert out[n] == {r["qid"] for r in select(rows, n, 0)}
    assert len(out[3]) == 3 and out[3] < out[7]  # nested: fewer questions are a subset of more
    # a shard keeps its own questions of the subset
    shard = tmp_path / "shard.parquet"
    write_table("questions", rows[::2], shard)
    backbone_questions(str(full), str(shard), str(tmp_path / "s.parquet"), 7, 0, {})
    assert set(read_table("questions", tmp_path / "s.parquet")["qid"]) == out[7] & {r["qid"] for r in rows[::2]}


def test_workflow_routes_only_that_backbone_through_its_subset(workdir):
    make_config(workdir, n=2, models={"big": scripted_model("big"), "small": scripted_model("small")},
                backbones=("big", "small"), methods=("cot", "sc", "lmad"), backbone_n={"small": 1})
    out = snakemake(workdir, "-n", "-p", "--quiet", "rules").stdout
    assert re.search(r"backbone_questions\s+4\b", out), out
    dry = snakemake(workdir, "-n", "--forceall").stdout
    for d in DATASETS:
        assert f"results/small/data/{d}.parquet" in dry
        assert f"results/big/data/{d}.parquet" not in dry
