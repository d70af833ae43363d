"""Load benchmark questions from local files or the Hugging Face hub, sample, trim.

A local file is read by its suffix: JSONL (one object a line; any other suffix), a ``.json``
list, a ``.csv`` file with a header line, or ``.parquet``. The usual Hugging Face copies of
the math, choice and opinion benchmarks are tabled in ``lmad.data.tasks``.

``load_dataset_spec`` is the entry point for the workflow: it loads one config entry,
draws a seeded sample with ``select`` and optionally trims contexts with
``trim_context`` (for cheap CPU demos).
"""
from __future__ import annotations

import csv
import hashlib
import io
import itertools
import json
import logging
from pathlib import Path
from typing import Iterable

from .benchmarks import BENCHMARKS, DATASETS, check_dataset, record_from_raw
from .convert import DataError, merge_aliases
from .tasks import TaskDataError

log = logging.getLogger(__name__)


def _convert_rows(rows: Iterable[tuple[str, object]], dataset: str, source: str,
                  id_aliases: dict[str, list[str]] | None = None, name: str | None = None, seed: int = 0,
                  keep_all: bool = False) -> list[dict]:
    """Records for (where, raw) rows; skips the rows the benchmark's ``skip`` leaves out (unanswerable
    MuSiQue rows, MMLU-Redux rows marked erroneous unless ``keep_all``) and logs how many. ``id_aliases`` (2Wiki's answer_id →
    aliases) extends each record's aliases; ``seed`` draws shuffled option orders. A repeated
    qid is an error, except a verbatim repeat of a row whose qid is a content hash (the same
    question twice in a copy without ids), which is kept once and logged."""
    check_dataset(dataset)
    skip = BENCHMARKS[dataset].skip
    records, first_seen, skipped, repeats = [], {}, {}, 0
    for where, raw in rows:
        try:
            why = skip(raw, keep_all, where) if skip else None
        except TaskDataError as err:
            raise DataError(str(err)) from None
        if why:
            skipped[why] = skipped.get(why, 0) + 1
            continue
        record = record_from_raw(raw, dataset, where, source=source, name=name, seed=seed)
        extra = (id_aliases or {}).get(raw.get("answer_id")) if isinstance(raw.get("answer_id"), str) else None
        if extra:
            record["aliases"] = merge_aliases(record["answer"], record["aliases"] + extra)
        # Results are keyed by qid downstream, so a repeat would silently overwrite one.
        if record["qid"] in first_seen:
            first_where, first = first_seen[record["qid"]]
            if BENCHMARKS[dataset].content_ids and record == first:
                repeats += 1  # a content-hashed row repeated verbatim: one question, kept once
                continue
            raise DataError(f"{where}: duplicate qid {record['qid']!r} (first at {first_where})")
        first_seen[record["qid"]] = (where, record)
        records.append(record)
    for why, count in skipped.items():
        log.warning("%s: skipped %d %s", source, count, why.format(benchmark=dataset))
    if repeats:
        log.warning("%s: skipped %d %s rows repeating an earlier row verbatim", source, repeats, dataset)
    return records


def _decode(blob: bytes, path: Path, lineno: int | None = None) -> str:
    """UTF-8 text, or a DataError naming file, line and column of the first bad byte."""
    try:
        return blob.decode("utf-8")
    except UnicodeDecodeError as err:
        line = lineno or blob.count(b"\n", 0, err.start) + 1
        column = err.start - (blob.rfind(b"\n", 0, err.start) + 1) + 1
        raise DataError(f"{path} line {line}: not UTF-8 (byte 0x{blob[err.start]:02x} at column {column}); "
                        "benchmark files are UTF-8") from None


def _read_rows(path: Path, lines: bool = False) -> list[tuple[str, object]]:
    """(where, raw) per record: one per non-blank JSONL line, or per item of a .json list
    (``lines``: JSON lines whatever the suffix). An empty file is an error naming it."""
    try:
        blob = path.read_bytes()
    except OSError as err:
        raise DataError(f"{path}: cannot read ({err.strerror})") from None
    if not blob.strip():
        raise DataError(f"{path}: empty file (no records)")
    if path.suffix.lower() == ".csv" and not lines:
        return _csv_rows(blob, path)
    if path.suffix.lower() == ".parquet" and not lines:
        import polars as pl

        try:
            frame = pl.read_parquet(io.BytesIO(blob))
        except Exception as err:  # polars raises several kinds for a broken file
            raise DataError(f"{path}: not a readable Parquet file ({err})") from None
        return [(f"{path} row {i}", raw) for i, raw in enumerate(frame.to_dicts(), 1)]
    if path.suffix == ".json" and not lines:
        try:
            items = json.loads(_decode(blob, path))
        except json.JSONDecodeError as err:
            raise DataError(f"{path} line {err.lineno}: invalid JSON ({err.msg})") from None
        if not isinstance(items, list):
            raise DataError(f"{path}: expected a JSON list of records")
        return [(f"{path} item {i}", raw) for i, raw in enumerate(items, 1)]
    rows = []
    for lineno, raw_line in enumerate(blob.split(b"\n"), 1):
        line = _decode(raw_line, path, lineno)
        if not line.strip():
            continue
        try:
            rows.append((f"{path} line {lineno}", json.loads(line)))
        except json.JSONDecodeError as err:
            raise DataError(f"{path} line {lineno}: invalid JSON ({err.msg}, column {err.colno})") from None
        except ValueError as err:  # e.g. an integer past Python's digit limit
            raise DataError(f"{path} line {lineno}: invalid JSON ({err})") from None
    return rows


def _csv_rows(blob: bytes, path: Path) -> list[tuple[str, object]]:
    """(where, {column: text}) per CSV record after the header line, ``where`` naming the line
    the record starts on (a quoted field may span lines; blank lines are skipped). A UTF-8 BOM
    is dropped; a record with more or fewer fields than the header is an error naming its line."""
    reader = csv.reader(io.StringIO(_decode(blob, path).removeprefix("\ufeff"), newline=""), strict=True)
    rows, header, end = [], None, 0
    try:
        for fields in reader:
            start, end = end + 1, reader.line_num
            if not fields:
                continue
            if header is None:
                header = [h.strip() for h in fields]
                if not all(header) or len(set(header)) < len(header):
                    raise DataError(f"{path} line {start}: the header needs distinct, non-empty column names, "
                                    f"got {fields!r:.120}")
                continue
            if len(fields) != len(header):
                raise DataError(f"{path} line {start}: {len(fields)} fields but the header has {len(header)} columns")
            rows.append((f"{path} line {start}", dict(zip(header, fields))))
    except csv.Error as err:
        raise DataError(f"{path} line {reader.line_num}: invalid CSV ({err})") from None
    if header is None:
        raise DataError(f"{path}: CSV without a header line")
    return rows


def load_jsonl(path: str | Path, dataset: str, source: str | None = None,
               id_aliases: dict[str, list[str]] | None = None, name: str | None = None, seed: int = 0,
               keep_all: bool = False) -> list[dict]:
    """Records from a local file in the original schema of benchmark ``dataset``.

    JSONL (one object a line), a ``.json`` file holding a list, CSV (GPQA, GlobalOpinionQA)
    or Parquet, by the file's suffix. ``source`` is what the records name as their origin; it
    defaults to ``path``. ``name``, ``seed``: see ``record_from_raw``; ``keep_all``: MMLU-Redux.
    """
    path = Path(path)
    records = _convert_rows(_read_rows(path), dataset, str(path) if source is None else source, id_aliases, name,
                            seed, keep_all)
    if not records:
        raise DataError(f"{path}: no answerable {dataset} records")
    return records


def load_id_aliases(path: str | Path) -> dict[str, list[str]]:
    """2WikiMultiHopQA's official ``id_aliases.json``: one object a line with ``Q_id``,
    ``aliases`` and ``demonyms`` (JSON lines despite the suffix); the evaluation accepts all
    of them for that entity."""
    out: dict[str, list[str]] = {}
    for where, raw in _read_rows(Path(path), lines=True):
        if not isinstance(raw, dict) or not isinstance(raw.get("Q_id"), str):
            raise DataError(f"{where}: field 'Q_id': expected an object with a string Q_id")
        names = []
        for field in ("aliases", "demonyms"):
            value = raw.get(field) or []
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise DataError(f"{where}: field '{field}': expected a list of strings")
            names += value
        out[raw["Q_id"]] = names
    return out


def load_hf(hf_id: str, dataset: str, split: str, config: str | None = None,
            n: int | None = None, id_aliases: dict[str, list[str]] | None = None,
            name: str | None = None, seed: int = 0, keep_all: bool = False) -> list[dict]:
    """Records from a Hugging Face dataset (needs the network); the first ``n`` rows if given.
    Every benchmark's usual HF copy converts; their ids are tabled in ``lmad.data.tasks``."""
    from datasets import load_dataset  # heavy import, needed only here

    rows = itertools.islice(load_dataset(hf_id, config, split=split), n)
    where = f"hf:{hf_id}" + (f"/{config}" if config else "") + f" {split} row"
    return _convert_rows(((f"{where} {i}", dict(raw)) for i, raw in enumerate(rows, 1)),
                         dataset, f"hf:{hf_id}", id_aliases, name, seed, keep_all)


def _rank(seed: int, qid: str) -> str:
    # A content hash, unlike random/hash(), orders the same on every machine and run.
    return hashlib.sha256(f"{seed}\0{qid}".encode()).hexdigest()


def select(records: list[dict], n: int | None, seed: int) -> list[dict]:
    """A seeded sample of ``n`` records (all if ``n`` is None or >= len), sorted by qid.

    Records are ranked by sha256(seed, qid), so the sample depends only on the qids,
    ``n`` and ``seed``, not on input order, and growing ``n`` only adds questions.
    """
    if n is not None and n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    if n is not None and n < len(records):
        records = sorted(records, key=lambda r: _rank(seed, r["qid"]))[:n]
    return sorted(records, key=lambda r: r["qid"])


def _size(paragraph: dict) -> int:
    return len(paragraph["title"]) + len(" ".join(paragraph["sentences"]))


def trim_context(record: dict, max_chars: int) -> dict:
    """A copy of ``record`` whose context fits about ``max_chars`` characters.

    Supporting paragraphs (by their ``paragraph`` index; by title for a fact without one)
    are always kept, even past the budget. Other paragraphs are then added in original
    order while they fit; the first that does not fit ends the filling. Kept paragraphs
    stay in their original order, and the facts' indices are renumbered to match. A
    paragraph's size is its title plus its sentences joined by spaces.
    """
    by_index = {f["paragraph"] for f in record["supporting_facts"] if f.get("paragraph") is not None}
    by_title = {f["title"] for f in record["supporting_facts"] if f.get("paragraph") is None}
    keep = [i in by_index or p["title"] in by_title for i, p in enumerate(record["context"])]
    used = sum(_size(p) for p, kept in zip(record["context"], keep) if kept)
    for i, paragraph in enumerate(record["context"]):
        if keep[i]:
            continue
        if used + _size(paragraph) > max_chars:
            break
        keep[i] = True
        used += _size(paragraph)
    new_index = {old: new for new, old in enumerate(i for i, kept in enumerate(keep) if kept)}
    facts = [{**f, "paragraph": new_index[f["paragraph"]]} if f.get("paragraph") is not None else f
             for f in record["supporting_facts"]]
    return {**record, "context": [p for p, kept in zip(record["context"], keep) if kept], "supporting_facts": facts}


def resolve_path(path: str | Path, base_dir: str | Path) -> Path:
    """A config's dataset file (``path:``, ``aliases_path:``): absolute as given, relative to
    ``base_dir`` (the checkout holding the Snakefile) otherwise. The rule declares its input
    and the stage loads it through this one function, so both name the same file whatever
    ``--directory`` the run uses."""
    return Path(path) if Path(path).is_absolute() else Path(base_dir) / path


def dataset_type(name: str | None, spec: dict) -> str:
    """The benchmark of config entry ``datasets.<name>``: its ``type``, else its name, so
    ``hotpotqa:`` needs no type and ``hotpotqa-dev: {type: hotpotqa, ...}`` sits beside it."""
    benchmark = spec.get("type", name)
    if benchmark not in DATASETS:
        key = "type" if "type" in spec else "name (or give it a type:)"
        raise ValueError(f"config datasets.{name}: {key} must be a benchmark, one of "
                         f"{', '.join(DATASETS)}; got {benchmark!r}")
    return benchmark


def load_dataset_spec(spec: dict, base_dir: str | Path) -> list[dict]:
    """Load, sample and optionally trim one dataset entry of the workflow config.

    ``spec``: {"name": the config key, "type": its benchmark, one of DATASETS (default: the
    name), "source": "jsonl" | "local" (the same: a local file of any supported suffix) | "hf",
    "path" (jsonl/local, relative to ``base_dir``), "hf_id", "hf_config", "split" (hf), "n",
    "seed" (the sample, and the option order of GPQA and TruthfulQA), "keep_all" (mmlu-redux:
    also the rows its annotators marked as erroneous), "max_context_chars"}.
    Local records name ``spec["path"]`` as written as their source, so records are the
    same wherever the checkout lives. The sample is drawn from the whole file or split.
    """
    name = spec.get("name")
    benchmark = dataset_type(name, spec)
    kind = spec.get("source", "jsonl")
    aliases = load_id_aliases(resolve_path(spec["aliases_path"], base_dir)) if spec.get("aliases_path") else None
    seed, keep_all = spec.get("seed", 0), bool(spec.get("keep_all", False))
    if kind in ("jsonl", "local"):
        if not spec.get("path"):
            raise ValueError(f"dataset spec {name!r}: source {kind!r} needs 'path'")
        records = load_jsonl(resolve_path(spec["path"], base_dir), benchmark, source=str(spec["path"]),
                             id_aliases=aliases, name=name, seed=seed, keep_all=keep_all)
    elif kind == "hf":
        if not spec.get("hf_id") or not spec.get("split"):
            raise ValueError(f"dataset spec {name!r}: source 'hf' needs 'hf_id' and 'split'")
        records = load_hf(spec["hf_id"], benchmark, spec["split"], config=spec.get("hf_config"),
                          id_aliases=aliases, name=name, seed=seed, keep_all=keep_all)
    else:
        raise ValueError(f"dataset spec {name!r}: unknown source {kind!r} (expected 'jsonl', 'local' or 'hf')")
    records = select(records, spec.get("n"), spec.get("seed", 0))
    max_chars = spec.get("max_context_chars")
    return records if max_chars is None else [trim_context(r, max_chars) for r in records]
