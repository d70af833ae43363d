"""The benchmarks' official scorers of free-form answers, as their scripts compute them.

HotpotQA's ``hotpot_evaluate_v1.py`` for HotpotQA and 2WikiMultiHopQA (whose script is adapted
from it), MuSiQue's SQuAD-style EM/F1, and yes/no exact match for StrategyQA; always the max over
the answer and its aliases, the prediction scored as written. Used by the span and yes/no types
(:meth:`lmad.answers.span.SpanType.score`) and by the judge's known-answer battery.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from typing import Sequence

from ..data.benchmarks import BENCHMARKS
from .text import normalize_hotpot

def _as_list(golds: str | Sequence[str]) -> list[str]:
    if isinstance(golds, str):
        return [golds]
    return [g for g in golds if g is not None]


#: Benchmark → official scoring rules (each benchmark's ``scoring``, lmad.data.benchmarks).
#: 2WikiMultiHopQA's official script is HotpotQA's; its aliases come from the data.
SCORING_RULES = {b.name: b.scoring for b in BENCHMARKS.values() if b.scoring}
_SHARD = re.compile(r"\.shard\d+$")


def known_benchmark(dataset: str) -> bool:
    return _SHARD.sub("", dataset) in SCORING_RULES


def scoring_rules(dataset: str) -> str:
    """The official rules of a dataset (its benchmark name, or a shard of it)."""
    try:
        return SCORING_RULES[_SHARD.sub("", dataset)]
    except KeyError:
        raise ValueError(f"no official scoring rules for dataset {dataset!r}; "
                         f"known: {', '.join(SCORING_RULES)}") from None


def _f1_hotpot(pred_norm: str, gold_norm: str) -> float:
    # hotpot_evaluate_v1.f1_score: a yes/no/noanswer mismatch scores 0 whatever the overlap
    special = ("yes", "no", "noanswer")
    if (pred_norm in special or gold_norm in special) and pred_norm != gold_norm:
        return 0.0
    return _token_f1(pred_norm.split(), gold_norm.split())


def _f1_squad(pred_norm: str, gold_norm: str) -> float:
    # MuSiQue's metrics/answer.py (SQuAD v2): no special case; two empty sides score 1
    p_toks, g_toks = pred_norm.split(), gold_norm.split()
    if not p_toks or not g_toks:
        return float(p_toks == g_toks)
    return _token_f1(p_toks, g_toks)


def _token_f1(p_toks: list[str], g_toks: list[str]) -> float:
    same = sum((Counter(p_toks) & Counter(g_toks)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(p_toks), same / len(g_toks)
    return 2 * precision * recall / (precision + recall)


def score(pred: str, golds: str | Sequence[str], rules: str = "hotpotqa") -> tuple[float, float]:
    """(EM, F1) of a prediction as the benchmark's official script computes them, maximised
    over golds (answer + aliases).  The prediction is scored as written.

    ``rules``: ``hotpotqa`` (HotpotQA, 2Wiki), ``musique``, or ``yes_no`` (StrategyQA: EM
    of the normalized prediction against the yes/no gold; F1 equals EM, the benchmark
    reports accuracy only)."""
    gs = _as_list(golds)
    if not gs:
        return 0.0, 0.0
    if isinstance(pred, str) and all(isinstance(g, str) for g in gs):
        return _score_of(pred, tuple(gs), rules)
    return _score(pred, gs, rules)


@functools.lru_cache(maxsize=1 << 16)  # the paper analyses score the same answer against a gold again and again
def _score_of(pred: str, golds: tuple[str, ...], rules: str) -> tuple[float, float]:
    return _score(pred, golds, rules)


def _score(pred: str, gs: Sequence[str], rules: str) -> tuple[float, float]:
    p = normalize_hotpot(pred)
    norms = [normalize_hotpot(g) for g in gs]
    em = float(any(p == g for g in norms))
    if rules == "hotpotqa":
        return em, max(_f1_hotpot(p, g) for g in norms)
    if rules == "musique":
        return em, max(_f1_squad(p, g) for g in norms)
    if rules == "yes_no":
        return em, em
    raise ValueError(f"unknown scoring rules {rules!r}; expected hotpotqa, musique or yes_no")


def exact_match(pred: str, golds: str | Sequence[str], rules: str = "hotpotqa") -> float:
    """Official exact match (see :func:`score`)."""
    return score(pred, golds, rules)[0]


def f1_score(pred: str, golds: str | Sequence[str], rules: str = "hotpotqa") -> float:
    """Official token F1, maximised over golds (see :func:`score`)."""
    return score(pred, golds, rules)[1]
