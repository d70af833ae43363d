"""Benchmarks (multi-hop QA; math, multiple-choice, truthfulness and opinion tasks) as one
canonical question record; see ``convert`` for the record, ``tasks`` for the non-multi-hop
benchmarks and ``loaders`` for I/O."""
from .convert import ANSWER_TYPE, DATASETS, DataError, record_from_raw
from .loaders import dataset_type, load_dataset_spec, load_hf, load_jsonl, select, trim_context

__all__ = [
    "ANSWER_TYPE",
    "DATASETS",
    "DataError",
    "dataset_type",
    "load_dataset_spec",
    "load_hf",
    "load_jsonl",
    "record_from_raw",
    "select",
    "trim_context",
]
