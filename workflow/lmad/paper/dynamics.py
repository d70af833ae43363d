"""Debate dynamics of the debate baselines, from their round tables (correctness against answer +
aliases by the question's answer type: ``lmad.answers.gold_correct``).

For one method on one dataset, ``c[q][t][i]`` ∈ {0, 1} is whether agent i's answer to question q
is correct after round t (a question that stopped early keeps its last answers). With K agents
and rounds t = 0..R:

    agent accuracy(t)      = mean over q, i of c[q][t][i]
    majority accuracy(t)   = mean over q of [the majority_vote winner (answers grouped by the
                             type's equivalence) has > K/2 votes and is correct]
    initial composition    = wrong majority (Σ_i c[q][0][i] < K/2), even split (= K/2), correct
                             majority (> K/2); R-final accuracy = majority accuracy(R) within each,
                             R-final agent accuracy = agent accuracy(R) within each
    difficult              = wrong majority ∪ even split (Σ_i c[q][0][i] ≤ K/2), TrueMAD §B.2:
                             "Questions are grouped by the number of correct agents in R1; reported
                             groups include wrong majority, even split, correct majority, and
                             difficult cases with at least half wrong. [...] the difficult-case
                             group combines wrong-majority and even-split cases." TrueMAD's R1 is
                             the first response round, round 0 here. Reported: agent and majority
                             accuracy per round on the difficult questions, and at R-final
    CPL  (Correction Preference Lift, unitless) =
           P(c[t+1]=1 | c[t]=0) / P(c[t+1]=0 | c[t]=1)   over all agent transitions t → t+1
           (correction rate over corruption rate; > 1: revisions favour correct answers; NaN
           when no correct agent state exists, inf when there are corrections but no corruptions)
    AME  (Asymmetric Majority Escape, percentage points) =
           P(final majority correct | initial wrong majority) − P(final majority wrong | initial
           correct majority)
    CMP1vK (Correct-Minority Propagation, %) =
           P(final majority correct | exactly one agent correct at round 0)   (CMP1v3 for K = 4)

The TrueMAD summary names CPL, AME and CMP without formulas; their definitions above are this
project's operationalization and are the ones tested. Its stratified tables (Tables 7–9) report
R-final agent-level accuracy per group.
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from .. import layout
from ..answers import gold_correct, majority_vote
from ..schemas import read_table


def answers_by_qid(path: str) -> dict[str, list[str]]:
    """{qid: answers in agent order} of one samples table, qids in sorted order."""
    s = read_table("samples", path).select("qid", "agent", "answer").sort("qid", "agent")
    out: dict[str, list[str]] = {}
    for qid, answer in zip(s["qid"].to_list(), s["answer"].to_list()):
        out.setdefault(qid, []).append(answer)
    return out


def correctness_by_round(golds: dict, paths: list[str]) -> dict[str, list[tuple[list[int], int]]]:
    """{qid: [(agent correct flags, strict-majority correct) per round]} for one method and dataset.
    ``golds``: {(dataset, qid): ``answers.Gold``}."""
    dataset = layout.parse(paths[0]).dataset
    em: dict[tuple[str, str], int] = {}  # (answer, qid) -> correct: agents and rounds repeat answers
    # (qid, answers) -> (flags, majority): a question whose agents repeat their answers (a converged
    # debate, an agent that holds its position) is voted on once, not every round
    scored: dict[tuple[str, tuple[str, ...]], tuple[list[int], int]] = {}
    last: dict[str, tuple[list[int], int]] = {}  # a question that stopped keeps its last round's
    out: dict[str, list] = {}

    def correct(answer: str, qid: str) -> int:
        if (answer, qid) not in em:
            em[(answer, qid)] = int(gold_correct(answer, golds[(dataset, qid)]))
        return em[(answer, qid)]

    def score(qid: str, answers: tuple[str, ...]) -> tuple[list[int], int]:
        if (qid, answers) not in scored:
            winner, info = majority_vote(answers, golds[(dataset, qid)].answer_type)
            scored[(qid, answers)] = ([correct(a or "", qid) for a in answers],
                                      int(info["strict_majority"] and correct(winner, qid)))
        return scored[(qid, answers)]

    for path in paths:
        for qid, answers in answers_by_qid(path).items():
            last[qid] = score(qid, tuple(answers))
        for qid, (flags, majority) in last.items():
            out.setdefault(qid, []).append((list(flags), majority))
    n = len(paths)
    # a question first active after round 0 cannot happen; pad defensively to full length
    return {q: rs for q, rs in out.items() if len(rs) == n}


def _rate(num: int, den: int) -> float:
    return 100 * num / den if den else math.nan


#: initial compositions, by the share of agents right at round 0 (mutually exclusive)
COMPOSITIONS = ("wrong_majority", "even_split", "correct_majority")
DIFFICULT = "difficult"  # wrong majority ∪ even split (TrueMAD §B.2)

Rounds = list[tuple[list[int], int]]


def composition(first: Sequence[int]) -> str:
    """The initial composition of a question from its round-0 agent flags."""
    right, k = sum(first), len(first)
    return "wrong_majority" if 2 * right < k else "even_split" if 2 * right == k else "correct_majority"


def is_difficult(first: Sequence[int]) -> bool:
    """TrueMAD's difficult case: at least half of the agents wrong at the first response round."""
    return 2 * sum(first) <= len(first)


def _agent_acc(per_q: Sequence[Rounds], t: int) -> float:
    flags = [f for rs in per_q for f in rs[t][0]]
    return 100 * float(np.mean(flags)) if flags else math.nan


def _majority_acc(per_q: Sequence[Rounds], t: int) -> float:
    return _rate(sum(rs[t][1] for rs in per_q), len(per_q))


def dynamics(per_q: dict[str, Rounds]) -> dict:
    rounds = len(next(iter(per_q.values()))) if per_q else 0
    row: dict = {"n": len(per_q), "rounds": max(rounds - 1, 0)}
    hard = [rs for rs in per_q.values() if is_difficult(rs[0][0])]
    for t in range(rounds):
        row[f"agent_acc_r{t}"] = _agent_acc(list(per_q.values()), t)
        row[f"majority_acc_r{t}"] = 100 * float(np.mean([rs[t][1] for rs in per_q.values()]))
        row[f"{DIFFICULT}_agent_acc_r{t}"] = _agent_acc(hard, t)
        row[f"{DIFFICULT}_majority_acc_r{t}"] = _majority_acc(hard, t)
    groups: dict[str, list[Rounds]] = {key: [] for key in COMPOSITIONS}
    one_correct = []
    fix = fix_den = spoil = spoil_den = 0
    for rs in per_q.values():
        groups[composition(rs[0][0])].append(rs)
        if sum(rs[0][0]) == 1:
            one_correct.append(rs[-1][1])
        for (a, _), (b, _) in zip(rs, rs[1:]):
            for x, y in zip(a, b):
                if x:
                    spoil_den += 1
                    spoil += 1 - y
                else:
                    fix_den += 1
                    fix += y
    groups[DIFFICULT] = hard
    for key, members in groups.items():
        row[f"n_{key}"] = len(members)
        row[f"final_acc_{key}"] = _majority_acc(members, -1)
        row[f"final_agent_acc_{key}"] = _agent_acc(members, -1)
    fix_rate, spoil_rate = (fix / fix_den if fix_den else math.nan), (spoil / spoil_den if spoil_den else math.nan)
    row["cpl"] = (math.nan if math.isnan(fix_rate) or math.isnan(spoil_rate) else
                  fix_rate / spoil_rate if spoil_rate else (math.inf if fix_rate else math.nan))
    wm, cm = [rs[-1][1] for rs in groups["wrong_majority"]], [rs[-1][1] for rs in groups["correct_majority"]]
    escape = _rate(sum(wm), len(wm))
    lose = _rate(len(cm) - sum(cm), len(cm))
    row["ame"] = escape - lose
    row["cmp_1vK"] = _rate(sum(one_correct), len(one_correct))
    row["n_one_correct"] = len(one_correct)
    return row
