"""The pairwise jury's severity battery (docs/studies.md "Pairwise jury"; the layered-disagreement
paper's §G: 54 pairs of a known-better and a controlled degradation of it, in three severity tiers).

Each battery question (one with a known answer, :func:`lmad.judge_battery.known_answer`, and a
known-wrong rival, :func:`lmad.judge_battery.rival_answer`) gives one **known-better** text — the
known answer, committed to, with the question's supporting sentences where it has any, and the rival
weighed and set aside — and one degraded copy per tier:

* ``severe`` — the conclusion is wrong: the same text with the known answer and the rival swapped
  (it commits to the rival and dismisses the right answer);
* ``moderate`` — the commitment is withdrawn: both answers are named as possible, the same support
  quoted, and none is chosen;
* ``subtle`` — the right answer, committed, with its support and the weighing of the rival dropped:
  only the bare conclusion is left.

With the default 18 questions per dataset that is 3 x 18 = 54 pairs per dataset with gold, the
paper's battery size. A dataset with fewer usable questions gives fewer pairs (the report says so);
one without gold (GlobalOpinionQA) gives none, and the jury is unvalidated there.

The texts are this project's, built from the run's own questions; the paper authored its battery
by hand from its syntheses, and its wording is not given.
"""
from __future__ import annotations

import random
from collections import defaultdict
from typing import Iterable, Sequence

from lmad.judge_battery import known_answer, rival_answer, rival_pool

#: most severe first: a jury that detects a tier is expected to detect every tier above it
TIERS = ("severe", "moderate", "subtle")
#: what each tier's degraded text loses (the report's legend)
DEGRADATION = {
    "severe": "wrong conclusion (the known answer and a known-wrong rival swapped)",
    "moderate": "no commitment (both answers left open, the same support quoted)",
    "subtle": "bare conclusion (the right answer without its support or the weighing of the rival)",
}
MAX_SUPPORT = 2  # supporting sentences quoted at most
MAX_SUPPORT_CHARS = 400


def shown(q: dict, answer: str) -> str:
    """An answer as the battery's texts state it: a choice question's letter with its option's text."""
    choices = q.get("choices") or ()
    letter = answer.strip().upper()
    if len(letter) == 1 and "A" <= letter <= "Z" and ord(letter) - ord("A") < len(choices):
        return f"{letter} ({str(choices[ord(letter) - ord('A')]).strip()})"
    return answer.strip()


def support(q: dict) -> str:
    """The question's supporting sentences (its ``supporting_facts`` in its passages), at most
    :data:`MAX_SUPPORT`, or "" when it has none."""
    context = q.get("context") or []
    out = []
    for fact in q.get("supporting_facts") or ():
        i, s = fact.get("paragraph"), fact.get("sent_id")
        if i is None or not 0 <= i < len(context):
            continue
        sentences = context[i].get("sentences") or []
        if s is not None and 0 <= s < len(sentences) and sentences[s].strip() and sentences[s].strip() not in out:
            out.append(sentences[s].strip())
        if len(out) == MAX_SUPPORT:
            break
    return " ".join(out)[:MAX_SUPPORT_CHARS]


def _committed(answer: str, other: str, quoted: str) -> str:
    said = f'The evidence for it: "{quoted}" ' if quoted else ""
    return (f"The answer is {answer}. {said}One could argue for {other} instead, and that reading deserves a "
            f"fair hearing, but it fits the question less well than {answer} does, so the answer is {answer}.")


def texts(q: dict, known: str, rival: str) -> dict[str, str]:
    """``better`` and each tier's degraded text for one question."""
    good, bad, quoted = shown(q, known), shown(q, rival), support(q)
    said = f'The evidence: "{quoted}" ' if quoted else ""
    return {"better": _committed(good, bad, quoted),
            "severe": _committed(bad, good, quoted),
            "moderate": (f"The answer may be {good} or {bad}. {said}Both readings have something for them, "
                         "and I do not commit to either."),
            "subtle": f"The answer is {good}."}


def build_battery(questions: Iterable[dict], per_dataset: int, seed: int,
                  tiers: Sequence[str] = TIERS) -> list[dict]:
    """Severity pairs (``a``: the known-better text, ``b``: its degradation), seeded per dataset:
    up to ``per_dataset`` questions of each dataset that have a known answer and a rival, each
    giving one pair per tier of ``tiers``. Each item: ``dataset``, ``qid``, ``tier``, ``a``, ``b``,
    ``known`` and ``rival`` (the answers the texts state)."""
    unknown = set(tiers) - set(TIERS)
    if unknown:
        raise ValueError(f"jury battery tiers: {sorted(unknown)} not among {list(TIERS)}")
    usable = sorted((q for q in questions if known_answer(q) is not None), key=lambda q: (q["dataset"], q["qid"]))
    pool = rival_pool(usable)
    by_dataset: dict[str, list[dict]] = defaultdict(list)
    for q in usable:
        by_dataset[q["dataset"]].append(q)
    out = []
    for dataset in sorted(by_dataset):
        rng = random.Random(f"{seed}\0jury-tiers\0{dataset}")
        order = list(by_dataset[dataset])
        rng.shuffle(order)
        chosen = []
        for q in order:
            if len(chosen) == per_dataset:
                break
            rival = rival_answer(q, pool, rng)
            if rival is not None and rival.strip():
                chosen.append((q, rival))
        for q, rival in sorted(chosen, key=lambda c: c[0]["qid"]):
            known = known_answer(q)
            text = texts(q, known, rival)
            out += [{"dataset": dataset, "qid": q["qid"], "tier": tier, "a": text["better"], "b": text[tier],
                     "known": known, "rival": rival} for tier in TIERS if tier in tiers]
    return out


def shortfall(items: Sequence[dict], datasets: Iterable[str], per_dataset: int, tiers: Sequence[str]) -> list[str]:
    """One line per dataset of ``datasets`` whose battery has fewer than ``per_dataset`` questions
    (each question gives one pair per tier): how many it gave of how many wanted, and why."""
    got = defaultdict(set)
    for it in items:
        got[it["dataset"]].add(it["qid"])
    lines = []
    for d in sorted(set(datasets)):
        n = len(got.get(d, ()))
        if 0 < n < per_dataset:
            lines.append(f"`{d}` gave {n * len(tiers)} of the {per_dataset * len(tiers)} battery pairs wanted "
                         f"({n} of {per_dataset} questions had a known answer and a known-wrong rival)")
    return lines
