"""Du et al.'s own tables ("Improving Factuality and Reasoning in Language Models through Multiagent
Debate"; rule paper_du, results/paper/du/), from the judged predictions (the scores Table 1 averages)
and the debate dynamics (results/paper/dynamics.csv):

* **accuracy**: per backbone, the rows single agent (``cot``), majority of the agents before debate /
  self-consistency (``sc``) and multi-agent debate (``mad``, its final vote), one column per task and
  their unweighted Avg.; a cell is the accuracy in % with its correct / questions.
* **scaling** (when the backbones debate with different numbers of agents, config/du-et-al-scaling.yaml):
  per agent count and task the agents' accuracy and the strict-majority accuracy after every round
  (``lmad.paper.dynamics``): by number of agents at round 1 (the paper's "2 rounds", the initial answers
  counted as the first), and by rounds for every agent count.
* **cross-model** (when a backbone is a committee of different models, config/du-et-al-cross-model.yaml):
  each model debating alone and the committee debating jointly, correct / questions per task, the
  single agent beside it.
"""
from __future__ import annotations

import math
from collections import defaultdict
from typing import Mapping, Sequence

from lmad.number_format import fmt, markdown

#: the paper's rows, in order, and this pipeline's method for each
ROWS = (("cot", "Single agent"), ("sc", "Multi-agent majority (before debate)"), ("mad", "Multi-agent debate"))
AVG = "Avg."
#: the round the by-agents table reads: the paper's "2 rounds" count the initial answers as the first
STANDARD_ROUND = 1

ACCURACY_COLUMNS = ["backbone", "method", "dataset", "correct", "questions", "accuracy"]
SCALING_COLUMNS = ["backbone", "agents", "dataset", "round", "agent_acc", "majority_acc"]
CROSS_COLUMNS = ["backbone", "models", "debate", "dataset", "method", "correct", "questions", "accuracy"]


def counts(scored: Sequence[Mapping]) -> dict[tuple[str, str, str], tuple[float, int]]:
    """{(backbone, dataset, method): (Σ score, questions)} over scored predictions (``score`` 0..1)."""
    out: dict[tuple[str, str, str], list] = defaultdict(lambda: [0.0, 0])
    for r in scored:
        cell = out[(r["backbone"], r["dataset"], r["method"])]
        cell[0] += r["score"] or 0.0
        cell[1] += 1
    return {k: (v[0], v[1]) for k, v in out.items()}


def _acc(correct: float, n: int) -> float:
    return 100 * correct / n if n else math.nan


def accuracy_rows(cells: Mapping[tuple[str, str, str], tuple[float, int]], backbones: Sequence[str],
                  datasets: Sequence[str], methods: Sequence[str]) -> list[dict]:
    """Long rows of the accuracy table: per backbone, method of :data:`ROWS` the run has, and dataset,
    plus an ``Avg.`` row per (backbone, method), the unweighted mean over the datasets that have the
    method (NaN without one)."""
    out = []
    for b in backbones:
        for m, _ in ROWS:
            if m not in methods:
                continue
            accs = []
            for d in datasets:
                correct, n = cells.get((b, d, m), (0.0, 0))
                acc = _acc(correct, n)
                out.append({"backbone": b, "method": m, "dataset": d, "correct": correct, "questions": n,
                            "accuracy": acc})
                if n:
                    accs.append(acc)
            out.append({"backbone": b, "method": m, "dataset": AVG, "correct": None, "questions": None,
                        "accuracy": sum(accs) / len(accs) if accs else math.nan})
    return out


def _finite(x) -> bool:
    return isinstance(x, (int, float)) and math.isfinite(x)


def _correct(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else fmt(x)


def cell_text(row: Mapping) -> str:
    """``70.0 (14/20)``; the Avg. has no count; – without a question."""
    if not _finite(row["accuracy"]):
        return "–"
    acc = fmt(row["accuracy"], digits=1)
    return acc if row["questions"] is None else f"{acc} ({_correct(row['correct'])}/{row['questions']})"


def accuracy_markdown(rows: Sequence[Mapping], datasets: Sequence[str], labels: Mapping[str, str],
                      rounds: int) -> str:
    head = ["# Du et al.: single agent vs majority vs multi-agent debate", "",
            f"Accuracy (%) with correct / questions, per task; Avg. = the unweighted mean over the tasks. Multi-agent "
            f"debate: the agents' majority vote after {rounds} revision round{'s' * (rounds != 1)} (the paper's "
            f"{rounds + 1} rounds, the initial answers counted as the first); majority before debate: the same agents' "
            "initial answers voted (self-consistency). The seed overview prints no accuracy cells to compare with.",
            ""]
    if not rows:
        return "\n".join(head + ["No method of cot, sc, mad in this run."]) + "\n"
    by = {(r["backbone"], r["method"], r["dataset"]): r for r in rows}
    body = []
    for b in dict.fromkeys(r["backbone"] for r in rows):
        for m, name in ROWS:
            if (b, m, AVG) in by:
                body.append([b, name, *(cell_text(by[(b, m, d)]) for d in [*datasets, AVG])])
    return "\n".join(head) + "\n" + markdown(["Backbone", "Method", *(labels.get(d, d) for d in datasets), AVG], body)


def scaling_rows(dynamics: Sequence[Mapping], agents: Mapping[str, int], method: str = "mad") -> list[dict]:
    """Long rows (backbone, agents, dataset, round, agent accuracy %, strict-majority accuracy %) of the
    debate method's rows of results/paper/dynamics.csv, every round it holds."""
    out = []
    for r in dynamics:
        if r["method"] != method or r["backbone"] not in agents:
            continue
        t = 0
        while f"agent_acc_r{t}" in r:
            a, v = r[f"agent_acc_r{t}"], r.get(f"majority_acc_r{t}")
            if _finite(a) or _finite(v):
                out.append({"backbone": r["backbone"], "agents": agents[r["backbone"]], "dataset": r["dataset"],
                            "round": t, "agent_acc": 100 * a if _finite(a) else math.nan,
                            "majority_acc": 100 * v if _finite(v) else math.nan})
            t += 1
    return sorted(out, key=lambda r: (r["agents"], r["backbone"], r["dataset"], r["round"]))


def scaling_markdown(rows: Sequence[Mapping], datasets: Sequence[str], labels: Mapping[str, str]) -> str:
    head = ["# Du et al.: accuracy by number of agents and by rounds", "",
            "Strict-majority accuracy (%) of the debate (more than half of the agents give one answer and it is "
            "right; with two agents both must), the agents' mean accuracy after the slash. Round t: after t "
            "revision rounds (round 0: the initial answers; the paper counts them as its first round). Each "
            "agent count is a backbone of its own sharing the one model's cached calls; a round depends only on the "
            "rounds before it, so round t of the longest run is the final round of a t-round run. The seed overview "
            "prints no scaling cells.", ""]
    if not rows:
        return "\n".join(head + ["No debate round in this run."]) + "\n"
    by = {(r["agents"], r["dataset"], r["round"]): r for r in rows}

    def cell(r) -> str:
        if r is None:
            return "–"
        return f"{fmt(r['majority_acc'] if _finite(r['majority_acc']) else None, digits=1)} / " \
               f"{fmt(r['agent_acc'] if _finite(r['agent_acc']) else None, digits=1)}"

    counts_ = sorted({r["agents"] for r in rows})
    rounds = sorted({r["round"] for r in rows})
    standard = STANDARD_ROUND if STANDARD_ROUND in rounds else rounds[-1]
    by_agents = [[labels.get(d, d), *(cell(by.get((k, d, standard))) for k in counts_)] for d in datasets]
    by_rounds = [[str(k), labels.get(d, d), *(cell(by.get((k, d, t))) for t in rounds)]
                 for k in counts_ for d in datasets]
    return ("\n".join(head) + f"\n## By number of agents (round {standard})\n\n"
            + markdown(["Task", *(f"{k} agents" for k in counts_)], by_agents)
            + "\n## By rounds\n\n" + markdown(["Agents", "Task", *(f"Round {t}" for t in rounds)], by_rounds))


def cross_model_rows(cells: Mapping[tuple[str, str, str], tuple[float, int]], backbones: Sequence[str],
                     models: Mapping[str, Sequence[str]], datasets: Sequence[str],
                     methods: Sequence[str] = ("cot", "mad")) -> list[dict]:
    """Per backbone (a model alone, or a committee of several: ``debate`` = alone / jointly), dataset and
    method: correct / questions and accuracy %."""
    out = []
    for b in backbones:
        names = list(dict.fromkeys(models.get(b) or [b]))
        for d in datasets:
            for m in methods:
                correct, n = cells.get((b, d, m), (0.0, 0))
                out.append({"backbone": b, "models": " + ".join(names), "debate": "jointly" if len(names) > 1 else "alone",
                            "dataset": d, "method": m, "correct": correct, "questions": n, "accuracy": _acc(correct, n)})
    return out


def cross_model_markdown(rows: Sequence[Mapping], labels: Mapping[str, str]) -> str:
    head = ["# Du et al.: cross-model debate", "",
            "Correct / questions and accuracy (%): each model debating alone (its agents all copies of it) and the "
            "committee debating jointly (one agent per model), per task, the single agent (one model, no debate) "
            "beside it. The seed overview prints ChatGPT 14/20 and Bard 11/20 alone, 17/20 jointly, on 20 GSM8K "
            "questions; tests/test_paper_published_cells.py recomputes those cells through this table's code.", ""]
    if not rows:
        return "\n".join(head + ["No backbone in this run."]) + "\n"
    by = {(r["backbone"], r["dataset"], r["method"]): r for r in rows}
    body = []
    for r in rows:
        if r["method"] != "mad":
            continue
        single = by.get((r["backbone"], r["dataset"], "cot"))
        body.append([r["backbone"], r["models"], r["debate"], labels.get(r["dataset"], r["dataset"]), cell_text(r),
                     cell_text(single) if single else "–"])
    return "\n".join(head) + "\n" + markdown(["Backbone", "Models", "Debate", "Task", "Multi-agent debate % (correct)",
                                              "Single agent % (correct)"], body)
