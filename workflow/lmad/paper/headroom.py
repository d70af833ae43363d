"""Recoverable headroom (When Debate Helps), per method, from saved tables.

Correctness here is the question's own rule (``lmad.answers.gold_correct``) against the gold
answer and its aliases: normalized exact match for spans and yes/no, equivalence of numbers,
expressions and option letters otherwise — for the proposals (which are never judged), the round-0
vote (grouped by the same equivalence) and the final prediction alike, so the identity below is
exact. Judge accuracy is reported beside it.

Per question, with the K shared self-consistency proposals (samples/proposals.parquet) and C(a) the
correctness of answer a:

    vote     = C(majority_vote(proposals))           round-0 vote (the project's tie rule)
    hit      = any(C(p) for p in proposals)          proposal-hit (vote ⇒ hit)
    final    = C(method's prediction)
    headroom = hit ∧ ¬vote                           recoverable headroom
    recovered   = ¬vote ∧ hit ∧ final
    new_correct = ¬hit ∧ final
    damage      = vote ∧ ¬final
    gain     = mean(final) − mean(vote)

and, because vote ⇒ hit, gain = recovered + new_correct − damage exactly (as rates over the
same questions). ``headroom_rows`` checks this on integer counts and raises
``AccountingError`` when it does not hold.
"""
from __future__ import annotations

from typing import Iterable, Mapping, Sequence

from ..answers import Gold, gold_correct, majority_vote

COUNTS = ["vote", "hit", "headroom", "recovered", "new_correct", "damage", "final"]


class AccountingError(AssertionError):
    """gain ≠ recovered + new-correct − damage: an analysis bug, never a result."""


def question_flags(proposals: Sequence[str], prediction: str, gold: Gold) -> dict[str, bool]:
    """``gold``: the question's ``answers.Gold`` (its answer type compares the answers)."""
    vote = gold_correct(majority_vote(list(proposals), gold.answer_type)[0], gold)
    hit = any(gold_correct(p, gold) for p in proposals)
    final = gold_correct(prediction, gold)
    return {"vote": vote, "hit": hit, "headroom": hit and not vote, "recovered": (not vote) and hit and final,
            "new_correct": (not hit) and final, "damage": vote and not final, "final": final}


def check_identity(counts: Mapping[str, int], where: str) -> None:
    gain = counts["final"] - counts["vote"]
    parts = counts["recovered"] + counts["new_correct"] - counts["damage"]
    if gain != parts:
        raise AccountingError(f"{where}: gain {gain} ≠ recovered {counts['recovered']} + new-correct "
                              f"{counts['new_correct']} − damage {counts['damage']} (counts over "
                              f"{counts.get('n')} questions)")


def summarize(flags: Iterable[Mapping[str, bool]], where: str, judge_acc: float | None = None) -> dict:
    """Counts → rates in percent; the identity is asserted on the counts first."""
    flags = list(flags)
    counts = {k: sum(bool(f[k]) for f in flags) for k in COUNTS}
    counts["n"] = len(flags)
    check_identity(counts, where)
    n = max(len(flags), 1)
    rate = {k: 100 * counts[k] / n for k in COUNTS}
    return {"n": len(flags), "vote_acc": rate["vote"], "hit_rate": rate["hit"], "headroom": rate["headroom"],
            "recovered": rate["recovered"], "new_correct": rate["new_correct"], "damage": rate["damage"],
            "final_em": rate["final"], "gain": rate["final"] - rate["vote"], "judge_acc": judge_acc}
