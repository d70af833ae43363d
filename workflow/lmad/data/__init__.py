"""Benchmarks (multi-hop QA; math, multiple-choice, truthfulness and opinion tasks) as one
canonical question record; see ``benchmarks`` for every benchmark (the one place that says
what a benchmark is), ``convert`` for the record and the multi-hop benchmarks, ``tasks`` for
the others and ``loaders`` for I/O."""
from .benchmarks import ANSWER_TYPE, BENCHMARKS, DATASETS, Benchmark, record_from_raw
from .convert import DataError
from .loaders import dataset_type, load_dataset_spec, load_hf, load_jsonl, select, trim_context

__all__ = [
    "ANSWER_TYPE",
    "BENCHMARKS",
    "Benchmark",
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
