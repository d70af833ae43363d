"""Sharding (config `shards: N`): shards run as separate jobs through every model stage and
are merged before judging; the results equal an unsharded run's (test double)."""
import polars as pl

from conftest import make_config, snakemake, write_config
from lmad.schemas import read_table

METHODS = ["cot", "sc", "lmad", "lmad-concrete", "mad"]
DATASETS = ["hotpotqa", "strategyqa"]


def run(workdir, shards):
    config = make_config(workdir, n=3, methods=METHODS, lmad={"iterations": 2, "local_rounds": 1},
                         shards=shards)
    config["datasets"] = {d: config["datasets"][d] for d in DATASETS}
    config["paper"] = {"columns": ["cot", "sc", "mad", "lmad"], "baselines": ["cot", "sc", "mad"],
                       "bootstrap_resamples": 200, "trace_questions": 1}
    write_config(workdir, config)
    snakemake(workdir)
    return workdir / "results" / "scripted"


def frame(path, name):
    return read_table(name, path).drop("cached", strict=False)


def test_sharded_run_equals_unsharded(tmp_path):
    whole = run(tmp_path / "whole", 1)
    split = run(tmp_path / "split", 2)
    for d in DATASETS:
        # the shards ran as their own jobs: 2 + 1 of the 3 questions
        sizes = [len(read_table("samples", split / f"{d}.shard{s}" / "samples" / "proposals.parquet")) for s in (0, 1)]
        assert sizes == [6, 3]
        for s in (0, 1):
            assert (split / f"{d}.shard{s}" / "lmad" / "iter0" / "generate.parquet").exists()
        for m in METHODS:
            assert frame(split / d / "predictions" / f"{m}.parquet", "predictions").equals(
                frame(whole / d / "predictions" / f"{m}.parquet", "predictions")), (d, m)
        assert frame(split / d / "judgments.parquet", "judgments").equals(
            frame(whole / d / "judgments.parquet", "judgments")), d
        assert frame(split / d / "lmad" / "trace.parquet", "lmad_trace").equals(
            frame(whole / d / "lmad" / "trace.parquet", "lmad_trace")), d
    assert pl.read_csv(split / "analysis" / "table.csv").equals(pl.read_csv(whole / "analysis" / "table.csv"))
    # the other LMAD stage tables: one file per shard and iteration, holding that shard of every dataset
    commits = [read_table("lmad_commits", split / "lmad" / f"shard{s}" / "iter0" / "commit.parquet", keys=True)
               for s in (0, 1)]
    assert [set(c["dataset"]) for c in commits] == [set(DATASETS)] * 2
    # one LMAD stage job per shard, serving that shard of every dataset
    logs = tmp_path / "split" / "logs" / "scripted" / "lmad"
    assert sorted(p.name for p in logs.iterdir()) == ["shard0", "shard1"]
