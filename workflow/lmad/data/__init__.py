"""Multi-hop QA benchmarks (HotpotQA, 2WikiMultiHopQA, MuSiQue, StrategyQA) as one
canonical question record; see ``convert`` for the record and ``loaders`` for I/O."""
from .convert import DATASETS, DataError, record_from_raw
from .loaders import dataset_type, load_dataset_spec, load_hf, load_jsonl, select, trim_context

__all__ = [
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
