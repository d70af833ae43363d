"""Rules ``prepare_data`` and ``convert_model``."""
from __future__ import annotations

import logging
from pathlib import Path

from ..backends.model_files import convert_gguf, packaged_gguf
from ..data.loaders import load_dataset_spec
from ..schemas import write_table

log = logging.getLogger(__name__)


def prepare_data(questions: str, spec: dict, base_dir: str, provenance: dict) -> None:
    records = load_dataset_spec(spec, base_dir)
    if not records:
        raise ValueError(f"dataset {spec['name']!r} selected no questions (config datasets.{spec['name']})")
    write_table("questions", records, questions, provenance)
    log.info("%s: %d questions from %s", spec["name"], len(records), records[0]["source"])


def convert_model(model_dir: str, name: str, gguf: dict, provenance: dict) -> None:
    path = Path(gguf["path"]) if "path" in gguf else packaged_gguf(gguf["package"], gguf["file"])
    ident = convert_gguf(path, Path(model_dir), name)
    log.info("converted %s -> %s (sha256 %s)", path, model_dir, ident["sha256"])
