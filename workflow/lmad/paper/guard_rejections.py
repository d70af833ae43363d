"""Table 2's guard analysis, from the LMAD trace: the gate-activated subset (questions where the
strict policy rejected a candidate repair) and, per commit-guard check, the repairs it rejected
and how many of those contained the gold answer."""
from __future__ import annotations

import polars as pl

from ..answers import Gold
from ..protocols.localized_debate.commit_guard import CHECKS as CHECK_ORDER


def gate_activated(trace: pl.DataFrame) -> pl.DataFrame:
    """(backbone, dataset, qid) of questions where the strict policy rejected ≥ 1 candidate repair."""
    if trace.is_empty():  # no LMAD trace in the run
        return pl.DataFrame(schema={"backbone": pl.String, "dataset": pl.String, "qid": pl.String})
    return (trace.filter((pl.col("method") == "lmad") & (pl.col("admitted") == False))  # noqa: E712
            .select("backbone", "dataset", "qid").unique())


def contains_gold(nodes: list[str], gold: Gold | None) -> bool:
    """Whether a repair states a gold answer (or alias), by the question's answer type
    (``Gold.mentioned_in``: a span's words in a row, a number's value, an option's letter or
    text; yes/no golds and opinions never count: the words say nothing there)."""
    return gold is not None and gold.mentioned_in(" ".join(nodes or []))


REJECTION_COLUMNS = ["backbone", "check", "required", "repairs", "rejected", "rejected_with_gold", "truncated"]


def guard_rejections(traces: pl.DataFrame, golds: dict) -> list[dict]:
    """Per backbone and check of the strict policy's trace (``traces``: every method's
    ``lmad_trace`` rows with their ``backbone``; ``golds``: (dataset, qid) -> typed gold): repairs
    judged, repairs the check rejected, and rejected repairs that contain the gold answer (a
    false-rejection estimate). Every check is recorded under every policy, so the lexical and the
    model relation check are counted side by side whatever ``lmad.guard.relation`` gated on."""
    trace = traces.filter(pl.col("method") == "lmad")
    counts: dict[tuple[str, str], dict] = {}
    for r in trace.to_dicts():
        if not r["checks"]:
            continue
        gold = contains_gold(r["repair_nodes"], golds.get((r["dataset"], r["qid"])))
        for c in r["checks"]:
            k = counts.setdefault((r["backbone"], c["check"]), {"backbone": r["backbone"], "check": c["check"],
                                                               "required": False, "repairs": 0, "rejected": 0,
                                                               "rejected_with_gold": 0, "truncated": 0})
            k["repairs"] += 1
            k["required"] |= bool(c["required"])
            if r["stop_reason"] == "resolver_truncated":
                k["truncated"] += 1
            elif not c["passed"]:
                k["rejected"] += 1
                k["rejected_with_gold"] += gold
    return sorted(counts.values(), key=lambda k: (k["backbone"], CHECK_ORDER.index(k["check"])
                                                  if k["check"] in CHECK_ORDER else 99))
