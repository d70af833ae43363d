"""Every Parquet table of the pipeline: its schema, its sort key, and validated I/O.

Stages write through ``write_table`` (cast to the schema, sort by key, provenance in
the file metadata, atomic rename) and read through ``read_table`` (schema checked), so
a table that does not match its declaration fails at the stage boundary, by name.
"""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any, Iterable

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from . import __version__

_str, _int, _f64, _bool = pa.string(), pa.int64(), pa.float64(), pa.bool_()
_strs = pa.list_(_str)

# Columns every model-call row carries, for cost accounting.
_CALL = [("prompt_tokens", _int), ("completion_tokens", _int), ("finish_reason", _str), ("cached", _bool)]

TABLES: dict[str, tuple[pa.Schema, list[str]]] = {
    # one benchmark question in canonical form (rule prepare_data)
    "questions": (pa.schema([
        ("qid", _str), ("dataset", _str), ("question", _str),
        ("context", pa.list_(pa.struct([("title", _str), ("sentences", _strs)]))),
        ("answer", _str), ("aliases", _strs), ("qtype", _str),
        ("supporting_facts", pa.list_(pa.struct([("title", _str), ("sent_id", _int)]))),
        ("source", _str),
    ]), ["qid"]),
    # one solver call: an agent's free-form rationale and extracted answer
    "samples": (pa.schema([
        ("qid", _str), ("stage", _str), ("round", _int), ("agent", _int), ("temperature", _f64), ("seed", _int),
        ("response", _str), ("answer", _str), ("answer_norm", _str), ("answer_method", _str), *_CALL,
    ]), ["qid", "stage", "round", "agent"]),
    # one method's final answer for one question, with its whole cost
    "predictions": (pa.schema([
        ("qid", _str), ("dataset", _str), ("method", _str), ("prediction", _str), ("prediction_norm", _str),
        ("stop_reason", _str), ("stop_round", _int),
        ("calls", _int), ("prompt_tokens", _int), ("completion_tokens", _int),
    ]), ["method", "qid"]),
    # judge decision + official EM/F1 for one prediction; judge_correct is null when unscored
    "judgments": (pa.schema([
        ("qid", _str), ("dataset", _str), ("method", _str), ("prediction", _str), ("gold", _str), ("aliases", _strs),
        ("judge_model", _str), ("judge_verdict", _str), ("judge_correct", _f64), ("judge_raw", _str),
        ("em", _f64), ("f1", _f64), *_CALL,
    ]), ["method", "qid"]),
    # per-backbone accuracy summary (rule analyze)
    "accuracy": (pa.schema([
        ("backbone", _str), ("dataset", _str), ("method", _str), ("n", _int), ("n_scored", _int),
        ("judge_acc", _f64), ("em", _f64), ("f1", _f64),
        ("calls_per_q", _f64), ("prompt_tokens_per_q", _f64), ("completion_tokens_per_q", _f64),
    ]), ["backbone", "dataset", "method"]),
}


class SchemaError(ValueError):
    """A table does not match its declared schema."""


def _table_spec(name: str) -> tuple[pa.Schema, list[str]]:
    try:
        return TABLES[name]
    except KeyError:
        raise SchemaError(f"unknown table {name!r}; declared tables: {sorted(TABLES)}") from None


def to_arrow(name: str, rows: pl.DataFrame | Iterable[dict[str, Any]]) -> pa.Table:
    schema, key = _table_spec(name)
    if isinstance(rows, pl.DataFrame):
        table = rows.to_arrow()
    else:
        rows = list(rows)
        table = pa.Table.from_pylist(rows, schema=schema) if rows else schema.empty_table()
    have, want = set(table.column_names), set(schema.names)
    if have != want:
        raise SchemaError(f"table {name!r}: missing columns {sorted(want - have)}, "
                          f"unexpected columns {sorted(have - want)}")
    try:
        table = table.select(schema.names).cast(schema)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as err:
        raise SchemaError(f"table {name!r}: {err}") from err
    return table.sort_by([(k, "ascending") for k in key])


def write_table(name: str, rows, path: str | os.PathLike, provenance: dict[str, Any] | None = None) -> pa.Table:
    """Validate, sort and atomically write a table with provenance metadata."""
    table = to_arrow(name, rows)
    meta = {"table": name, "package_version": __version__, **(provenance or {})}
    table = table.replace_schema_metadata({b"lmad": json.dumps(meta, sort_keys=True).encode()})
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        pq.write_table(table, tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return table


def read_table(name: str, path: str | os.PathLike) -> pl.DataFrame:
    schema, _ = _table_spec(name)
    table = pq.read_table(path)
    got = table.schema.remove_metadata()
    if not got.equals(schema):
        raise SchemaError(f"{path}: does not match table {name!r}:\n expected {schema}\n found {got}")
    return pl.from_arrow(table)


def provenance_of(path: str | os.PathLike) -> dict[str, Any]:
    meta = pq.read_schema(path).metadata or {}
    return json.loads(meta.get(b"lmad", b"{}"))
