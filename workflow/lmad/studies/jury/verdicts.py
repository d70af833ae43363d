"""The layered-disagreement paper's swap-checked pairwise jury on final answers (docs/studies.md "Pairwise jury").

Every pair (method A's and method B's final answer to one question) is asked of every juror
twice, A first and then B first, with a ``choice`` constraint (``1`` / ``2`` / ``tie``). A
juror's verdict on the pair is kept only when both orders name the same answer; otherwise
(including an unparsable reply) it is a tie. The jury's verdict is the strict majority of the
jurors' verdicts, else a tie. In that paper, without the swap check a jury declared debate the
winner 66 % of the time from reading order alone.

Two figures say whether the jury can be believed: **swap-consistency** (per juror, the share
of pairs whose two orders agree, ties included) and **sensitivity**, on an authored battery of
known-better vs known-worse pairs (the gold answer vs a rival: another question's answer or a
passage title sharing no token with the gold, or the opposite yes/no), the share the jury
decides for the better answer. An always-tie jury is perfectly consistent and has sensitivity
0, so the jury passes only if both reach the floor.

**Sub-scores** (config ``jury.subscores``, the paper's form, §G): instead of ``1`` / ``2`` / ``tie``
the juror scores each of the two answers 1-5 on coverage, steelmanning, commitment and soundness,
as JSON constrained to :data:`SUBSCORE_SCHEMA` (an enum of the five integers per key, the process
rubric's mechanism). One order's winner is the answer with the higher sum of its four scores (equal
sums: a tie); the swap check and the majority then run as above. A reply that is not exactly the
eight keys with integers 1-5 is a **fallback**: recorded with its reason, counted, never raised, and
its order has no winner (so the pair is a tie for that juror).

**Battery** (:mod:`lmad.studies.jury.battery`): known-better texts against degradations in three severity
tiers; the sensitivity is reported per tier, and the jury passes only if every tier at least as
severe as ``pass_tier`` reaches the floor (the paper's jury caught severe damage at 100 % and
moderate at 0 %: its ties rule out severe differences only).
"""
from __future__ import annotations

import math
from collections import Counter, defaultdict
from typing import Mapping, Sequence

from lmad.backends import ChatRequest
from lmad.studies.jury.battery import TIERS, build_battery  # noqa: F401 (lmad.studies.jury.verdicts.build_battery: the jury's battery)
from lmad.model_json import load_model_json
from lmad.prompts import Prompt, question_fields

CHOICES = ("1", "2", "tie")
#: the paper's four anchored sub-scores (§G), each 1-5 per answer
DIMENSIONS = ("coverage", "steelmanning", "commitment", "soundness")
SUBSCORES = tuple(range(1, 6))
SUBSCORE_KEYS = tuple(f"{d}_{side}" for side in (1, 2) for d in DIMENSIONS)
SUBSCORE_SCHEMA = {
    "type": "object",
    "properties": {k: {"enum": list(SUBSCORES)} for k in SUBSCORE_KEYS},
    "required": list(SUBSCORE_KEYS),
    "additionalProperties": False,
}


def jury_request(prompt: Prompt, question: dict, first: str, second: str, max_tokens: int,
                 subscores: bool = False) -> ChatRequest:
    """One order of one pair: ``choice`` 1 / 2 / tie, or with ``subscores`` the JSON of
    :data:`SUBSCORE_SCHEMA`."""
    constraint = {"json": SUBSCORE_SCHEMA} if subscores else {"choice": list(CHOICES)}
    return ChatRequest(messages=prompt.render(**question_fields(question), first=first.strip() or "(empty)",
                                              second=second.strip() or "(empty)"),
                       temperature=0.0, max_tokens=max_tokens, seed=0, constraint=constraint, role="jury")


def parse_subscores(text) -> tuple[tuple[list[int], list[int]] | None, str]:
    """``((first's four scores, second's four scores), "")`` in :data:`DIMENSIONS` order, or
    ``(None, reason)`` for anything but exactly the eight keys with integers 1-5; never raises."""
    obj, error = load_model_json(text) if isinstance(text, str) else (None, f"not text: {type(text).__name__}")
    if error:
        return None, f"invalid JSON: {error}"[:200]
    if not isinstance(obj, dict) or set(obj) != set(SUBSCORE_KEYS):
        got = sorted(map(str, obj)) if isinstance(obj, dict) else type(obj).__name__
        return None, f"expected an object with exactly the keys {list(SUBSCORE_KEYS)}, got {got}"[:200]
    for k in SUBSCORE_KEYS:
        v = obj[k]
        if isinstance(v, bool) or not isinstance(v, int) or v not in SUBSCORES:
            return None, f"{k!r} must be an integer 1-5, got {v!r}"[:200]
    return ([obj[f"{d}_1"] for d in DIMENSIONS], [obj[f"{d}_2"] for d in DIMENSIONS]), ""


def choice_of_scores(first: Sequence[int], second: Sequence[int]) -> str:
    """One order's choice from the two answers' sub-scores: the higher sum, ``tie`` when equal."""
    a, b = sum(first), sum(second)
    return "1" if a > b else "2" if b > a else "tie"


def read_reply(text, order: int, subscores: bool) -> dict:
    """A reply's columns of ``jury_verdicts``: ``choice``, ``winner``, ``a_scores`` / ``b_scores``
    (sub-scores mapped back to A and B; None in the choice mode or on a fallback) and
    ``parse_error`` ("" when parsed)."""
    if not subscores:
        choice = parse_choice(text)
        return {"choice": choice, "winner": winner(choice, order), "a_scores": None, "b_scores": None,
                "parse_error": "" if choice else "not exactly one of 1, 2, tie"}
    scores, error = parse_subscores(text)
    if scores is None:
        return {"choice": "", "winner": "", "a_scores": None, "b_scores": None, "parse_error": error}
    first, second = scores
    choice = choice_of_scores(first, second)
    a, b = (first, second) if order == 0 else (second, first)
    return {"choice": choice, "winner": winner(choice, order), "a_scores": a, "b_scores": b, "parse_error": ""}


def parse_choice(text) -> str:
    """``1``, ``2``, ``tie`` or ``""`` (not exactly one of them); never raises."""
    word = text.strip().rstrip(".").strip().lower() if isinstance(text, str) else ""
    return word if word in CHOICES else ""


def winner(choice: str, order: int) -> str:
    """The answer a reply picks, ``a`` / ``b`` / ``tie`` (``""`` unparsable): order 0 shows A first."""
    if choice == "tie":
        return "tie"
    if choice not in ("1", "2"):
        return ""
    return ("a" if choice == "1" else "b") if order == 0 else ("b" if choice == "1" else "a")


def swap_checked(first: str, second: str) -> tuple[str, bool]:
    """A juror's verdict from its two orders' winners, and whether the orders agreed."""
    consistent = first == second and first != ""
    return (first if consistent else "tie"), consistent


def jury_verdict(verdicts: Sequence[str]) -> str:
    """Strict majority of the jurors' verdicts, else ``tie``."""
    if not verdicts:
        return "tie"
    top, n = Counter(verdicts).most_common(1)[0]
    return top if 2 * n > len(verdicts) else "tie"


#: why a dataset's pairs are not counted: its questions gave no known-better vs known-worse pair
NO_KNOWN_ANSWER = ("no known-better vs known-worse pair could be built from its questions (a task without gold, "
                   "such as GlobalOpinionQA, has no answer known to be better), so the jury is unvalidated there")


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else float("nan")


def _subscore_means(two: Mapping, validated: set) -> dict:
    """Per dimension: the mean sub-score of A and of B over every parsed reply to a real pair of a
    validated dataset (both orders, every juror), and the share of (pair, juror, answer) whose two
    orders gave that answer the same score (pairs with both orders parsed)."""
    a = defaultdict(list)
    b = defaultdict(list)
    same = defaultdict(list)
    replies = 0
    for (kind, _, dataset, _, _), orders in two.items():
        if kind != "pair" or dataset not in validated:
            continue
        scored = [r for r in orders.values() if r.get("a_scores") is not None]
        replies += len(scored)
        for r in scored:
            for i, d in enumerate(DIMENSIONS):
                a[d].append(r["a_scores"][i])
                b[d].append(r["b_scores"][i])
        if len(scored) == 2:
            for i, d in enumerate(DIMENSIONS):
                same[d] += [scored[0]["a_scores"][i] == scored[1]["a_scores"][i],
                            scored[0]["b_scores"][i] == scored[1]["b_scores"][i]]
    return {"scored_replies": replies,
            "a": {d: _mean(a[d]) for d in DIMENSIONS}, "b": {d: _mean(b[d]) for d in DIMENSIONS},
            "same_both_orders": {d: _mean(same[d]) for d in DIMENSIONS}}


def required_tiers(pass_tier: str) -> tuple[str, ...]:
    """The tiers whose sensitivity must reach the floor: ``pass_tier`` and every more severe one."""
    if pass_tier not in TIERS:
        raise ValueError(f"jury battery pass_tier: one of {list(TIERS)}, got {pass_tier!r}")
    return TIERS[:TIERS.index(pass_tier) + 1]


def summarize(rows: Sequence[Mapping], min_rate: float, pass_tier: str = TIERS[0]) -> dict:
    """Verdicts and reliability from ``jury_verdicts`` rows of every juror (``kind``, ``judge_model``,
    ``dataset``, ``qid``, ``order``, ``winner``; ``tier`` on battery rows, ``a_scores`` /
    ``b_scores`` in the sub-score mode).

    Sensitivity is measured on the datasets that have battery pairs, overall and per tier; a
    dataset with real pairs and no battery pair (an opinion task: no gold, so nothing is known to
    be better) is ``unvalidated``: its pairs are counted there (dataset -> pairs), never among the
    wins and ties, whatever the jury's figures elsewhere. ``pairs`` = every real pair = wins + ties
    + the unvalidated pairs. ``fallbacks``: replies without a choice (unparsable), per juror."""
    two = defaultdict(dict)
    for r in rows:
        two[(r["kind"], r["judge_model"], r["dataset"], r["qid"], r.get("tier") or "")][r["order"]] = r
    flags = defaultdict(list)  # juror -> swap-consistency of each of its pairs (real and battery)
    votes = defaultdict(list)  # (kind, dataset, qid, tier) -> juror verdicts
    fallbacks = Counter()
    for (kind, juror, dataset, qid, tier), orders in sorted(two.items()):
        fallbacks[juror] += sum(not r["winner"] for r in orders.values())
        verdict, consistent = swap_checked(*(orders[o]["winner"] if o in orders else "" for o in (0, 1)))
        flags[juror].append(consistent)
        votes[(kind, dataset, qid, tier)].append(verdict)
    decided = {key: jury_verdict(v) for key, v in votes.items()}
    validated = {dataset for (kind, dataset, *_) in decided if kind == "battery"}
    real = [(dataset, v) for (kind, dataset, *_), v in decided.items() if kind == "pair"]
    pairs = [v for dataset, v in real if dataset in validated]
    unvalidated = dict(sorted(Counter(dataset for dataset, _ in real if dataset not in validated).items()))
    battery = [(tier, v) for (kind, _, _, tier), v in decided.items() if kind == "battery"]
    by_tier = {t: [v for tier, v in battery if tier == t] for t in TIERS if any(tier == t for tier, _ in battery)}
    tier_sensitivity = {t: _mean([v == "a" for v in vs]) for t, vs in by_tier.items()}
    consistency = {j: sum(f) / len(f) for j, f in flags.items() if f}
    all_flags = [f for fl in flags.values() for f in fl]
    mean_consistency = _mean(all_flags)
    sensitivity = _mean([v == "a" for _, v in battery])
    # tiered: every tier down to pass_tier must reach the floor; an untiered battery: overall
    gates = ([(f"sensitivity ({t})", tier_sensitivity.get(t, float("nan"))) for t in required_tiers(pass_tier)]
             if by_tier else [("sensitivity", sensitivity)])
    checks = [("swap-consistency", mean_consistency), *gates]
    passed = bool(battery) and all(v >= min_rate for _, v in checks)
    if not battery:
        reason = ("the sensitivity battery has no item: no dataset of the run gave a known-better vs known-worse "
                  "pair (a task without gold, such as GlobalOpinionQA, has no answer known to be better), so the "
                  "jury cannot be validated on this run")
    elif passed:
        reason = " and ".join(n for n, _ in checks) + f" reach {100 * min_rate:.0f} %"
    else:
        low = [f"{n} {_pct(v)}" for n, v in checks if not v >= min_rate]
        reason = f"below {100 * min_rate:.0f} % on " + " and ".join(low)
    return {"pairs": len(real), "a_wins": pairs.count("a"), "b_wins": pairs.count("b"), "ties": pairs.count("tie"),
            "battery": len(battery), "sensitivity": sensitivity, "consistency": mean_consistency,
            "tier_pairs": {t: len(vs) for t, vs in by_tier.items()}, "tier_sensitivity": tier_sensitivity,
            "resolves": [t for t, v in tier_sensitivity.items() if v >= min_rate],
            "juror_consistency": consistency, "fallbacks": dict(sorted(fallbacks.items())),
            "replies": sum(len(o) for o in two.values()), "subscores": _subscore_means(two, validated),
            "passed": passed, "reason": reason, "validated": sorted(validated), "unvalidated": unvalidated}


def _pct(x: float) -> str:
    return "–" if x is None or not math.isfinite(x) else f"{100 * x:.1f} %"


def unvalidated_line(unvalidated: Mapping[str, int]) -> str:
    """The report's sentence on the datasets whose pairs the jury cannot be shown to judge ("" when none)."""
    if not unvalidated:
        return ""
    named = ", ".join(f"`{d}` ({n} pairs)" for d, n in unvalidated.items())
    return f"Not counted — {named}: {NO_KNOWN_ANSWER}; these pairs' verdicts are not shown."
