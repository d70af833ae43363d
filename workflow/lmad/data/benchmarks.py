"""Every benchmark, registered once: the one place that says what a benchmark is.

A record names the converter of one raw row (its original schema and its usual Hugging Face
copy) into the canonical question's fields, the answer type its replies are read and scored by
(``lmad.answers``), its label in tables and figures, its id rule and, for the free-form types,
the official scoring rules (``lmad.answers.official``). Every list that names benchmarks reads
this table: ``DATASETS`` (the order of error messages and of the config schema's dataset
``type`` enum, filled in from here at load: ``lmad.config_schema``), ``ANSWER_TYPE``, the paper's
labels (``lmad.paper.label``), the loaders' content-id rule and the official scorers' table.

Adding a benchmark is its converter (in ``tasks``, ``convert`` or a module of its own) and one
``register`` call below (docs/layout.md "How to add"); tests/test_how_to_add.py adds a toy one.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from . import tasks
from .convert import DataError, check_facts, multihop_fields, musique_unanswerable
from .tasks import TaskDataError

#: a converter: (raw row, where, seed) -> the canonical question's fields (``tasks._fields``)
Converter = Callable[[dict, str, int], dict]
#: a row the loaders leave out: (raw row, keep_all, where) -> why, as the log says it
#: ("unanswerable {benchmark} rows"), or None to keep it
Skip = Callable[[object, bool, str], "str | None"]


@dataclass(frozen=True)
class Benchmark:
    """``content_ids``: its rows usually carry no id, so a qid is a content hash (``tasks._qid``)
    and a verbatim repeat of a row is one question kept once; otherwise a repeated qid is an
    error. ``scoring``: the official rules of a free-form benchmark (``lmad.answers.official``).
    ``skip``: which raw rows the loaders leave out (and log), e.g. MuSiQue's unanswerable ones."""

    name: str
    convert: Converter
    answer_type: str
    label: str
    content_ids: bool = False
    scoring: str | None = None
    skip: Skip | None = None

    def __post_init__(self):
        if self.scoring is not None and self.answer_type not in ("span", "yes_no"):
            raise ValueError(f"benchmark {self.name!r}: official scoring rules are for span and yes/no answers")


BENCHMARKS: dict[str, Benchmark] = {}


def register(entry: Benchmark) -> Benchmark:
    if entry.name in BENCHMARKS:
        raise ValueError(f"benchmark {entry.name!r} is already registered")
    BENCHMARKS[entry.name] = entry
    return entry


def check_dataset(dataset: str) -> None:
    if dataset not in BENCHMARKS:
        raise ValueError(f"unknown dataset {dataset!r}; expected one of {', '.join(BENCHMARKS)}")


def record_from_raw(raw: dict, dataset: str, where: str, source: str | None = None,
                    name: str | None = None, seed: int = 0) -> dict:
    """Canonical record for one raw row of benchmark ``dataset``, original or HF shape.

    ``where`` ("file line 7") prefixes every error; ``source`` (file path or "hf:<id>")
    is stored in the record and defaults to ``where``. ``name``: the config's name for the
    dataset (``hotpotqa-dev``), stored as ``dataset``; the benchmark is stored as
    ``benchmark`` and decides conversion and scoring. It defaults to the benchmark. ``seed``
    draws the option order of choice benchmarks that store the correct option in a fixed place.
    """
    check_dataset(dataset)
    if not isinstance(raw, dict):
        raise DataError(f"{where}: expected a JSON object, got {type(raw).__name__}")
    entry = BENCHMARKS[dataset]
    try:
        fields = entry.convert(raw, where, seed)
    except TaskDataError as err:
        raise DataError(str(err)) from None
    first = {}
    for i, p in enumerate(fields["context"]):
        first.setdefault(p["title"], i)
    facts = [f if "paragraph" in f else {**f, "paragraph": first.get(f["title"])} for f in fields["supporting_facts"]]
    check_facts(facts, fields["context"], where)
    fields["supporting_facts"] = facts
    return {
        "qid": fields["qid"],
        "dataset": name or dataset,
        "benchmark": dataset,
        "question": fields["question"],
        "context": fields["context"],
        "answer": fields["answer"],
        "aliases": fields["aliases"],
        "qtype": fields["qtype"],
        "supporting_facts": fields["supporting_facts"],
        "source": where if source is None else source,
        "answer_type": entry.answer_type,
        "choices": fields["choices"],
        "choice_order": fields["choice_order"],
        "survey": fields["survey"],
    }


# ----------------------------------------------------------------------------- the benchmarks

# multi-hop QA (lmad.data.convert): passages and supporting facts, free-form answers
register(Benchmark("hotpotqa", multihop_fields("hotpotqa"), "span", "HotpotQA", scoring="hotpotqa"))
# 2WikiMultiHopQA's official script is HotpotQA's (adapted, same normalization and F1 special case)
register(Benchmark("2wikimultihopqa", multihop_fields("2wikimultihopqa"), "span", "2Wiki",
                   scoring="hotpotqa"))
register(Benchmark("musique", multihop_fields("musique"), "span", "MuSiQue", scoring="musique",
                   skip=musique_unanswerable))
register(Benchmark("strategyqa", multihop_fields("strategyqa"), "yes_no", "StrategyQA", scoring="yes_no"))
# math (lmad.data.tasks)
register(Benchmark("gsm8k", tasks.gsm8k, "numeric", "GSM8K", content_ids=True))
register(Benchmark("math500", tasks.math500, "math", "MATH500"))
register(Benchmark("aime", tasks.numeric_contest("aime"), "numeric", "AIME"))
register(Benchmark("amc12", tasks.numeric_contest("amc12"), "numeric", "AMC12"))
register(Benchmark("olympiadbench", tasks.olympiadbench, "math", "OlympiadBench"))
# multiple choice and truthfulness
register(Benchmark("gpqa-diamond", tasks.gpqa, "choice", "GPQA-Diamond"))
register(Benchmark("mmlu", tasks.mmlu, "choice", "MMLU", content_ids=True))
register(Benchmark("mmlu-redux", tasks.mmlu, "choice", "MMLU-Redux", content_ids=True,
                   skip=tasks.mmlu_redux_erroneous))
register(Benchmark("truthfulqa", tasks.truthfulqa, "choice", "TruthfulQA", content_ids=True))
# opinion: no gold, a survey of countries
register(Benchmark("globalopinionqa", tasks.globalopinionqa, "opinion", "GlobalOpinionQA", content_ids=True))

#: every benchmark's name, in registration order
DATASETS = tuple(BENCHMARKS)
#: each benchmark's answer type (``lmad.answers``): how replies are read, compared and scored
ANSWER_TYPE = {b.name: b.answer_type for b in BENCHMARKS.values()}
