"""Sharding (config ``shards: N``, rules/shards.smk): every dataset's questions split into N
shards that run as separate jobs through every model stage, merged again before judging.

A shard is a dataset of its own to the question-level rules, named ``{dataset}.shard{s}``,
so generation, LMAD and the debate baselines need no shard logic: every call of a
question depends on that question alone (seeds derive from its id), so a sharded run
computes exactly the calls, and hence the tables, of an unsharded one.
"""
from __future__ import annotations

import logging

import polars as pl

from ..schemas import provenance_of, read_table, write_table

log = logging.getLogger(__name__)


def shard_data(questions: str, shard_questions: str, shard: int, shards: int, provenance: dict) -> None:
    """Question i of the dataset (in question-id order) goes to shard i mod N."""
    rows = read_table("questions", questions).sort("qid")
    part = rows.filter(pl.int_range(pl.len()) % shards == shard)
    write_table("questions", part, shard_questions, provenance)
    log.info("shard %d of %d: %d of %d questions", shard, shards, len(part), len(rows))


def merge_shards(parts: list[str], merged: str, provenance: dict) -> None:
    """One table from its shards' copies; the table's schema is read from their metadata."""
    names = {provenance_of(p).get("table") for p in parts}
    if len(names) != 1 or None in names:
        raise ValueError(f"shards of {merged} are not one declared table (found {sorted(map(str, names))}); "
                         "rerun the jobs that wrote them")
    name = names.pop()
    table = pl.concat([read_table(name, p) for p in parts], how="vertical")
    write_table(name, table, merged, provenance)
    log.info("%s: %d rows of table %r from %d shards", merged, len(table), name, len(parts))
