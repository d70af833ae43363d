"""A known-answer battery for the LLM judge, built from the run's own questions.

Every item is a (question, candidate) pair whose verdict is known without a model:
known-correct candidates (the gold answer, its aliases, harmless surface variants, the
gold inside a short sentence) and known-incorrect ones (another question's gold of the
same answer type, the opposite of a yes/no gold, a different entity named in the same
context). The judge sees each item exactly as it sees a real prediction, so its recall on
each side tells whether its verdicts mean anything (the layered-disagreement paper's
two-sided floor: an always-"correct" judge scores 100 % on one side and 0 % on the other, and
fails).
"""
from __future__ import annotations

import math
import random
import re
from collections import defaultdict
from dataclasses import dataclass
from typing import Iterable, Sequence

from .answers import get, gold_of, type_of
from .answers.choice import LETTERS
from .answers.official import score
from .answers.text import normalize_hotpot

POSITIVE_KINDS = ("gold", "alias", "variant_case", "variant_punct", "in_sentence")
NEGATIVE_KINDS = ("other_gold", "opposite_yes_no", "near_miss")
KINDS = POSITIVE_KINDS + NEGATIVE_KINDS

_NUMBER = re.compile(r"^[\d\s.,:/-]+$")


def gold_kind(gold: str) -> str:
    """yes_no, number (digits, dates, amounts) or entity: what a plausible wrong answer to a
    free-form question looks like."""
    norm = normalize_hotpot(gold)
    if norm in ("yes", "no"):
        return "yes_no"
    return "number" if _NUMBER.match(gold.strip()) else "entity"


def unrelated(candidate: str, golds: Sequence[str]) -> bool:
    """True when the candidate shares no scored token with any gold: surely incorrect."""
    em, f1 = score(candidate, golds, "hotpotqa")
    return em == 0.0 and f1 == 0.0 and bool(normalize_hotpot(candidate))


def known_answer(q: dict) -> str | None:
    """The answer every battery holds up as known-correct (known-better, the endorsed side) for
    question ``q``: its first gold that is not blank. None for a question without gold (an
    opinion: GlobalOpinionQA has no answer that is better than another) and for one whose gold
    is empty, so no battery item is ever built with an empty answer on its known-better side."""
    gold = gold_of(q)
    if not get(gold.answer_type).has_gold:
        return None
    return next((g for g in gold.answers if g.strip()), None)


def rival_pool(questions: Iterable[dict]) -> dict[str, list[str]]:
    """The known answers (:func:`known_answer`) of ``questions`` by answer type (yes/no golds left
    out: a yes/no question's rival is its opposite), where :func:`rival_answer` draws rivals from."""
    pool: dict[str, list[str]] = defaultdict(list)
    for q in questions:
        known = known_answer(q)
        if known is not None and gold_kind(known) != "yes_no":
            pool[type_of(q)].append(known)
    return pool


def rival_answer(q: dict, pool: dict[str, Sequence[str]], rng: random.Random) -> str | None:
    """A known-wrong answer to ``q`` (layer B's rebuttals, the rubric's and the jury's
    batteries), by the question's answer type: the opposite of a yes/no gold; another option's
    letter of a choice question; for a span, a seeded pick among the ``pool``'s span answers and
    the question's passage titles unrelated to every gold; for a number or expression, among the
    pool's answers of that type that are not equivalent to a gold. None when there is none, and
    always for a question without a known answer (:func:`known_answer`: an opinion, an empty
    gold): nothing is known to be worse there."""
    known = known_answer(q)
    if known is None:
        return None
    gold = gold_of(q)
    kind = get(gold.answer_type)
    if gold.answer_type == "yes_no" or (kind.free_form and gold_kind(known) == "yes_no"):
        return "no" if normalize_hotpot(known) == "yes" else "yes"
    if kind.free_form:
        options = {g for g in pool.get(gold.answer_type, ()) if unrelated(g, gold)} | {
            p["title"] for p in q.get("context") or () if unrelated(p["title"], gold)}
    elif gold.answer_type == "choice":
        letters = LETTERS[:len(q.get("choices") or ()) or 4]
        options = {x for x in letters if not gold.correct(x)}
    else:
        options = {g for g in pool.get(gold.answer_type, ()) if not kind.is_empty(g) and not gold.correct(g)}
    return rng.choice(sorted(options)) if options else None


@dataclass(frozen=True)
class Item:
    dataset: str
    qid: str
    kind: str
    expected: bool  # True: a correct judge says "correct"
    candidate: str


def _positives(q: dict, gold: str, kinds: set[str], max_aliases: int) -> list[Item]:
    out = []
    if "gold" in kinds:
        out.append(("gold", gold))
    if "alias" in kinds:
        out += [("alias", a) for a in q["aliases"][:max_aliases] if a.strip()]
    if "variant_case" in kinds:
        out.append(("variant_case", gold.lower() if gold != gold.lower() else gold.capitalize()))
    if "variant_punct" in kinds:
        out.append(("variant_punct", f"{gold}."))
    if "in_sentence" in kinds:
        out.append(("in_sentence", f"The answer is {gold}."))
    return [Item(q["dataset"], q["qid"], k, True, c) for k, c in out]


def _negatives(q: dict, gold: str, kinds: set[str], pool: dict[str, list[str]], rng: random.Random) -> list[Item]:
    golds = [g for g in (q["answer"], *q["aliases"]) if g.strip()]
    kind_of = gold_kind(gold)
    out = []
    if "opposite_yes_no" in kinds and kind_of == "yes_no":
        out.append(("opposite_yes_no", "no" if normalize_hotpot(gold) == "yes" else "yes"))
    if "other_gold" in kinds and kind_of != "yes_no":  # for yes/no the opposite is the other gold
        others = [g for g in pool.get(kind_of, []) if unrelated(g, golds)]
        if others:
            out.append(("other_gold", rng.choice(sorted(set(others)))))
    if "near_miss" in kinds and kind_of != "yes_no":
        titles = [p["title"] for p in q["context"] if unrelated(p["title"], golds)]
        if titles:
            out.append(("near_miss", rng.choice(sorted(set(titles)))))
    return [Item(q["dataset"], q["qid"], k, False, c) for k, c in out]


def per_dataset_sample(questions: Sequence[dict], per_dataset: int, seed: int, salt: str = ""):
    """(dataset, rng, chosen) per dataset in name order: at most ``per_dataset`` of its questions
    (sorted by qid), drawn by the dataset's own seeded generator, which is handed on for the
    battery's other draws, so a dataset's items do not depend on which other datasets the run has.
    ``salt`` keeps the batteries of different instruments apart."""
    by_dataset: dict[str, list[dict]] = defaultdict(list)
    for q in sorted(questions, key=lambda q: (q["dataset"], q["qid"])):
        by_dataset[q["dataset"]].append(q)
    for dataset in sorted(by_dataset):
        rng = random.Random(f"{seed}\0{salt}{dataset}")
        chosen = by_dataset[dataset]
        if len(chosen) > per_dataset:
            chosen = sorted(rng.sample(chosen, per_dataset), key=lambda q: q["qid"])
        yield dataset, rng, chosen


def build_battery(questions: Iterable[dict], questions_per_dataset: int, kinds: Sequence[str],
                  max_aliases: int, seed: int) -> list[Item]:
    """Seeded battery over at most ``questions_per_dataset`` questions of each dataset.

    Known-incorrect "other gold" answers come from every question of the run (all
    datasets), so a one-question dataset still gets one; candidates that share any token
    with the question's golds are never used as known-incorrect. A question without a known
    answer (:func:`known_answer`: an opinion, an empty gold) gives no item and no rival."""
    questions = sorted((q for q in questions if known_answer(q) is not None), key=lambda q: (q["dataset"], q["qid"]))
    pool: dict[str, list[str]] = defaultdict(list)
    for q in questions:
        pool[gold_kind(known_answer(q))].append(known_answer(q))
    wanted, items = set(kinds), []
    for _, rng, chosen in per_dataset_sample(questions, questions_per_dataset, seed):
        for q in chosen:
            seen: set[str] = set()
            gold = known_answer(q)
            for item in _positives(q, gold, wanted, max_aliases) + _negatives(q, gold, wanted, pool, rng):
                if item.candidate not in seen:  # a variant equal to the gold is one item
                    seen.add(item.candidate)
                    items.append(item)
    return items


def _rate(hits: int, n: int) -> float:
    return hits / n if n else math.nan


def summarize(rows: Sequence[dict], min_recall: float) -> dict:
    """Per-judge figures from judged battery rows (``expected``, ``judge_verdict``).

    An unscored verdict counts as a miss on both sides: a judge that never answers in the
    allowed form has recall 0 and fails."""
    pos = [r for r in rows if r["expected"]]
    neg = [r for r in rows if not r["expected"]]
    tp = sum(r["judge_verdict"] == "correct" for r in pos)
    tn = sum(r["judge_verdict"] == "incorrect" for r in neg)
    unscored = sum(r["judge_verdict"] == "unscored" for r in rows)
    tpr, tnr = _rate(tp, len(pos)), _rate(tn, len(neg))
    passed = bool(pos) and bool(neg) and tpr >= min_recall and tnr >= min_recall
    if not pos or not neg:
        reason = "the battery has no known-" + ("correct" if not pos else "incorrect") + " item"
    elif unscored == len(rows):
        reason = "every battery reply was unscored: the judge never answered in the allowed form"
    elif passed:
        reason = f"recall on known-correct and on known-incorrect items both reach {100 * min_recall:.0f} %"
    else:
        low = [f"{name} {100 * v:.1f} %" for name, v in (("known-correct", tpr), ("known-incorrect", tnr))
               if not v >= min_recall]
        reason = f"recall below {100 * min_recall:.0f} % on " + " and ".join(low)
    return {"n_correct_items": len(pos), "n_incorrect_items": len(neg), "tpr": tpr, "tnr": tnr,
            "balanced_acc": (tpr + tnr) / 2 if pos and neg else math.nan,
            "n_unscored": unscored, "unscored_rate": _rate(unscored, len(rows)),
            "min_recall": float(min_recall), "passed": passed, "reason": reason}


def cohen_kappa(a: Sequence[float], b: Sequence[float]) -> float:
    """Cohen's κ of two binary ratings (NaN when chance agreement is 1, e.g. both constant)."""
    n = len(a)
    if n == 0 or n != len(b):
        return math.nan
    observed = sum(x == y for x, y in zip(a, b)) / n
    pa, pb = sum(a) / n, sum(b) / n
    expected = pa * pb + (1 - pa) * (1 - pb)
    return math.nan if expected >= 1 else (observed - expected) / (1 - expected)
