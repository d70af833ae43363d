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
"""
from __future__ import annotations

from collections import Counter, defaultdict
from typing import Iterable, Mapping, Sequence

from .backends import ChatRequest
from .judge_battery import known_answer, per_dataset_sample, rival_answer, rival_pool
from .prompts import Prompt, question_fields

CHOICES = ("1", "2", "tie")


def jury_request(prompt: Prompt, question: dict, first: str, second: str, max_tokens: int) -> ChatRequest:
    return ChatRequest(messages=prompt.render(**question_fields(question), first=first.strip() or "(empty)",
                                              second=second.strip() or "(empty)"),
                       temperature=0.0, max_tokens=max_tokens, seed=0, constraint={"choice": list(CHOICES)}, role="jury")


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


def build_battery(questions: Iterable[dict], per_dataset: int, seed: int) -> list[dict]:
    """Known-better (``a``: the gold) vs known-worse (``b``: a rival) pairs, seeded. Only questions
    with a known answer (:func:`lmad.judge_battery.known_answer`) are drawn: a task without gold
    (GlobalOpinionQA) or a question whose gold is empty gives no pair, since nothing there is
    known to be better; :func:`summarize` names the datasets on which the jury is therefore
    unvalidated."""
    questions = sorted((q for q in questions if known_answer(q) is not None), key=lambda q: (q["dataset"], q["qid"]))
    pool = rival_pool(questions)
    out = []
    for dataset, rng, chosen in per_dataset_sample(questions, per_dataset, seed, "jury\0"):
        for q in chosen:
            rival = rival_answer(q, pool, rng)
            if rival is not None:
                out.append({"dataset": dataset, "qid": q["qid"], "a": known_answer(q), "b": rival})
    return out


#: why a dataset's pairs are not counted: its questions gave no known-better vs known-worse pair
NO_KNOWN_ANSWER = ("no known-better vs known-worse pair could be built from its questions (a task without gold, "
                   "such as GlobalOpinionQA, has no answer known to be better), so the jury is unvalidated there")


def summarize(rows: Sequence[Mapping], min_rate: float) -> dict:
    """Verdicts and reliability from ``jury_verdicts`` rows of every juror (``kind``, ``judge_model``,
    ``dataset``, ``qid``, ``order``, ``winner``).

    Sensitivity is measured on the datasets that have battery pairs; a dataset with real pairs and
    no battery pair (an opinion task: no gold, so nothing is known to be better) is ``unvalidated``:
    its pairs are counted there (dataset -> pairs), never among the wins and ties, whatever the
    jury's figures elsewhere. ``pairs`` = every real pair = wins + ties + the unvalidated pairs."""
    two = defaultdict(dict)
    for r in rows:
        two[(r["kind"], r["judge_model"], r["dataset"], r["qid"])][r["order"]] = r["winner"]
    flags = defaultdict(list)  # juror -> swap-consistency of each of its pairs (real and battery)
    votes = defaultdict(list)  # (kind, dataset, qid) -> juror verdicts
    for (kind, juror, dataset, qid), orders in sorted(two.items()):
        verdict, consistent = swap_checked(orders.get(0, ""), orders.get(1, ""))
        flags[juror].append(consistent)
        votes[(kind, dataset, qid)].append(verdict)
    decided = {key: jury_verdict(v) for key, v in votes.items()}
    validated = {dataset for (kind, dataset, _) in decided if kind == "battery"}
    real = [(dataset, v) for (kind, dataset, _), v in decided.items() if kind == "pair"]
    pairs = [v for dataset, v in real if dataset in validated]
    unvalidated = dict(sorted(Counter(dataset for dataset, _ in real if dataset not in validated).items()))
    battery = [v for (kind, *_), v in decided.items() if kind == "battery"]
    consistency = {j: sum(f) / len(f) for j, f in flags.items() if f}
    all_flags = [f for fl in flags.values() for f in fl]
    mean_consistency = sum(all_flags) / len(all_flags) if all_flags else float("nan")
    sensitivity = sum(v == "a" for v in battery) / len(battery) if battery else float("nan")
    passed = bool(battery) and mean_consistency >= min_rate and sensitivity >= min_rate
    if not battery:
        reason = ("the sensitivity battery has no item: no dataset of the run gave a known-better vs known-worse "
                  "pair (a task without gold, such as GlobalOpinionQA, has no answer known to be better), so the "
                  "jury cannot be validated on this run")
    elif passed:
        reason = f"swap-consistency and sensitivity both reach {100 * min_rate:.0f} %"
    else:
        low = [f"{n} {100 * v:.1f} %" for n, v in (("swap-consistency", mean_consistency),
                                                   ("sensitivity", sensitivity)) if not v >= min_rate]
        reason = f"below {100 * min_rate:.0f} % on " + " and ".join(low)
    return {"pairs": len(real), "a_wins": pairs.count("a"), "b_wins": pairs.count("b"), "ties": pairs.count("tie"),
            "battery": len(battery), "sensitivity": sensitivity, "consistency": mean_consistency,
            "juror_consistency": consistency, "passed": passed, "reason": reason,
            "validated": sorted(validated), "unvalidated": unvalidated}


def unvalidated_line(unvalidated: Mapping[str, int]) -> str:
    """The report's sentence on the datasets whose pairs the jury cannot be shown to judge ("" when none)."""
    if not unvalidated:
        return ""
    named = ", ".join(f"`{d}` ({n} pairs)" for d, n in unvalidated.items())
    return f"Not counted — {named}: {NO_KNOWN_ANSWER}; these pairs' verdicts are not shown."
