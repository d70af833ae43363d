"""Rules ``prepare_data`` and ``convert_model``."""
from __future__ import annotations

import logging
from pathlib import Path

from ..backends.model_files import convert_gguf, packaged_gguf
from ..data.loaders import load_dataset_spec, select
from ..schemas import read_table, write_table

log = logging.getLogger(__name__)


def prepare_data(questions: str, spec: dict, base_dir: str, provenance: dict) -> None:
    records = load_dataset_spec(spec, base_dir)
    if not records:
        raise ValueError(f"dataset {spec['name']!r} selected no questions (config datasets.{spec['name']})")
    write_table("questions", records, questions, provenance)
    log.info("%s: %d questions from %s", spec["name"], len(records), records[0]["source"])


def backbone_questions(full: str, part: str, questions: str, n: int, seed: int, provenance: dict) -> None:
    """A backbone's own, smaller sample (config ``backbone_n``): the first ``n`` questions of
    the dataset's seeded ranking (``select``), so it is a subset of every larger sample with
    the same seed; of a shard, the shard's questions in that subset."""
    chosen = {r["qid"] for r in select(read_table("questions", full).to_dicts(), n, seed)}
    rows = [r for r in read_table("questions", part).to_dicts() if r["qid"] in chosen]
    write_table("questions", rows, questions, provenance)
    log.info("%d of %s's questions (backbone_n %d, seed %d)", len(rows), part, n, seed)


def convert_model(model_dir: str, name: str, gguf: dict, provenance: dict) -> None:
    path = Path(gguf["path"]) if "path" in gguf else packaged_gguf(gguf["package"], gguf["file"])
    ident = convert_gguf(path, Path(model_dir), name)
    log.info("converted %s -> %s (sha256 %s)", path, model_dir, ident["sha256"])
