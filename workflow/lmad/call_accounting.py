"""What calls cost: the columns every call row carries, and their sums per question that every
predictions row carries. Cached calls count like fresh ones, since a fresh run of the method
alone would have issued them."""
from __future__ import annotations

from collections import defaultdict
from typing import Iterable

COST_COLUMNS = ("calls", "prompt_tokens", "completion_tokens")


def call_columns(c) -> dict:
    """The cost columns of one call row (``c``: a backend ``Completion``, or None for a call
    not made: an empty prediction the judge is not asked about)."""
    if c is None:
        return {"prompt_tokens": 0, "completion_tokens": 0, "finish_reason": "skipped", "cached": False}
    return {"prompt_tokens": c.prompt_tokens, "completion_tokens": c.completion_tokens,
            "finish_reason": c.finish_reason, "cached": c.cached}


def total_cost(rows: Iterable[dict]) -> dict[str, int]:
    """Calls and tokens of call rows."""
    total = dict.fromkeys(COST_COLUMNS, 0)
    for r in rows:
        total["calls"] += 1
        total["prompt_tokens"] += r["prompt_tokens"]
        total["completion_tokens"] += r["completion_tokens"]
    return total


def cost_per_question(rows: Iterable[dict]) -> defaultdict[str, dict[str, int]]:
    """Calls and tokens of call rows, per ``qid`` (a question without calls reads as zeros)."""
    by_q: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        by_q[r["qid"]].append(r)
    return defaultdict(lambda: dict.fromkeys(COST_COLUMNS, 0), {q: total_cost(rs) for q, rs in by_q.items()})
