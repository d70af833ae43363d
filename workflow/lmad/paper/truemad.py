"""TrueMAD's headline tables as the paper reports them (§4.2, Table 1; §B.1, Tables 4–6).

For one run (a backbone's replicate seed), method and benchmark, with ``c[q][t][i]`` whether agent
i's answer to question q is right after round t (:func:`lmad.paper.dynamics.correctness_by_round`;
the paper's R1 is round 0 here):

    Agent ACC(t) = mean over q, i of c[q][t][i]  (the individual agents' answers)
    Vote ACC(t)  = mean over q of [a strict majority, more than K/2 of the K agents, gives one
                   answer and it is right]; no strict majority (a tie, a scatter) counts wrong

Table 1 reports both at the last round. A benchmark pools the questions of all its configured
datasets (AIME's four MathArena copies are one benchmark of 90 questions, not four entries); its
Avg. is the mean over the benchmarks, per run. Each cell is the mean ± sample SD over the runs
(seeds) of a backbone; one run has no SD (shown as "n/a", never 0). Tables 4–6 report Agent ACC
per round R2..R5 the same way, one table per benchmark. Tables 7–9 (§B.2) report Agent ACC at the
last round within the groups of a benchmark's questions by their R1 (round-0) correctness
composition — wrong majority (fewer than half of the agents right), even split (exactly half),
correct majority (more than half) and difficult (wrong majority ∪ even split, the groups of
:func:`lmad.paper.dynamics.composition`) — each method grouped by its own R1 answers, pooled over
the benchmark's datasets like Table 1, mean ± sample SD over the runs; a group a run does not have
is left out of that run's mean.

The TrueMAD summary gives no Table 1 cells, only the averaged improvements it quotes (§4.2):
:data:`PUBLISHED_GAINS`, shown beside this run's own.
"""
from __future__ import annotations

import math
from typing import Mapping, Sequence

from .. import layout
from ..number_format import fmt, markdown
from ..stats import mean_sd
from .dynamics import COMPOSITIONS, DIFFICULT, Rounds, _agent_acc, _majority_acc, composition, is_difficult

#: the paper's benchmarks, in its order, with their labels; others follow in config order
BENCHMARKS = {"aime": "AIME", "gpqa-diamond": "GPQA-Diamond", "truthfulqa": "TruthfulQA"}
AVG = "avg"
#: the paper's round-wise table of each benchmark (§B.1)
ROUND_TABLES = {"aime": 4, "gpqa-diamond": 5, "truthfulqa": 6}
#: the paper's table by R1 composition of each benchmark (§B.2)
COMPOSITION_TABLES = {"aime": 7, "gpqa-diamond": 8, "truthfulqa": 9}
#: the groups of Tables 7–9, in the paper's order, with their labels
GROUPS = {"wrong_majority": "Wrong majority", "even_split": "Even split", "correct_majority": "Correct majority",
          DIFFICULT: "Difficult (≥ half wrong)"}
assert set(GROUPS) == {*COMPOSITIONS, DIFFICULT}
#: §4.2 / abstract: averaged over the three benchmarks, (method, matched baseline) -> (Agent ACC, Vote ACC) gain, points
PUBLISHED_GAINS = {("truemad", "mad"): (3.62, 3.52), ("truedmad", "dmad-manners"): (4.72, 4.06)}
NA = "n/a"


def benchmark_order(benchmarks: Mapping[str, str]) -> list[str]:
    """The benchmarks of ``{dataset: benchmark}``: the paper's first, then the others in config order."""
    seen = list(dict.fromkeys(benchmarks.values()))
    return [b for b in BENCHMARKS if b in seen] + [b for b in seen if b not in BENCHMARKS]


def pooled(per_dataset: Mapping[str, Mapping[str, Rounds]], benchmarks: Mapping[str, str]) -> dict[str, dict]:
    """{benchmark: {"n": questions, "agent": [Agent ACC per round], "vote": [Vote ACC per round]}} of one
    run and method: each benchmark's questions pooled over its datasets, so every question weighs alike."""
    members: dict[str, list[Rounds]] = {}
    for dataset, per_q in per_dataset.items():
        members.setdefault(benchmarks.get(dataset, dataset), []).extend(per_q.values())
    out = {}
    for bench, qs in members.items():
        rounds = min((len(rs) for rs in qs), default=0)
        groups = {g: [rs for rs in qs if (is_difficult(rs[0][0]) if g == DIFFICULT else composition(rs[0][0]) == g)]
                  for g in GROUPS} if rounds else {}
        out[bench] = {"n": len(qs), "agent": [_agent_acc(qs, t) for t in range(rounds)],
                      "vote": [_majority_acc(qs, t) for t in range(rounds)],
                      "groups": {g: {"n": len(m), "agent": _agent_acc([rs[:rounds] for rs in m], rounds - 1)}
                                 for g, m in groups.items()}}
    return out


def runs_by_cell(scores: Mapping[tuple[str, str, str], Mapping[str, Rounds]],
                 benchmarks: Mapping[str, str]) -> dict[tuple[str, str], dict[str, dict[str, dict]]]:
    """``{(run, dataset, method): {qid: Rounds}}`` → ``{(backbone, method): {run: pooled(...)}}``."""
    grouped: dict[tuple[str, str], dict[str, dict[str, Mapping[str, Rounds]]]] = {}
    for (run, dataset, method), per_q in scores.items():
        grouped.setdefault((layout.model_of(run), method), {}).setdefault(run, {})[dataset] = per_q
    return {key: {run: pooled(per_dataset, benchmarks) for run, per_dataset in runs.items()}
            for key, runs in grouped.items()}


def _final(values: Sequence[float]) -> float | None:
    return values[-1] if values and math.isfinite(values[-1]) else None


def _spread(values: Sequence[float]) -> dict:
    mean, sd = mean_sd(values)
    return {"mean": mean, "sd": sd, "seeds": len(values)}


def table1_rows(cells: Mapping[tuple[str, str], Mapping[str, Mapping[str, dict]]], order: Sequence[str],
                methods: Sequence[str]) -> list[dict]:
    """One row per backbone × method × benchmark (and Avg.): Agent ACC and Vote ACC at the last round,
    mean and sample SD over the runs, with the pooled question count. A run's Avg. is the mean over
    the benchmarks it has all of; methods in ``methods`` order, then any others."""
    rows = []
    backbones = list(dict.fromkeys(b for b, _ in cells))
    for backbone in backbones:
        present = [m for b, m in cells if b == backbone]
        for method in [m for m in methods if m in present] + [m for m in present if m not in methods]:
            runs = cells[(backbone, method)]
            avg: dict[str, list[float]] = {"agent": [], "vote": []}
            for bench in order:
                got = {k: [v for r in runs.values() if bench in r and (v := _final(r[bench][k])) is not None]
                       for k in ("agent", "vote")}
                n = max((r[bench]["n"] for r in runs.values() if bench in r), default=0)
                rows.append(_row(backbone, method, bench, n, got))
            for run in runs.values():
                finals = {k: [_final(run[b][k]) if b in run else None for b in order] for k in ("agent", "vote")}
                for k, vs in finals.items():
                    if vs and all(v is not None for v in vs):
                        avg[k].append(sum(vs) / len(vs))
            n = sum(r["questions"] for r in rows[-len(order):]) if order else 0
            rows.append(_row(backbone, method, AVG, n, avg))
    return rows


def _row(backbone: str, method: str, bench: str, n: int, got: Mapping[str, list[float]]) -> dict:
    agent, vote = _spread(got["agent"]), _spread(got["vote"])
    return {"backbone": backbone, "method": method, "benchmark": bench, "questions": n, "seeds": agent["seeds"],
            "agent_acc": agent["mean"], "agent_acc_sd": agent["sd"], "vote_acc": vote["mean"], "vote_acc_sd": vote["sd"]}


def round_rows(cells: Mapping[tuple[str, str], Mapping[str, Mapping[str, dict]]], order: Sequence[str],
               methods: Sequence[str]) -> list[dict]:
    """Tables 4–6 in long form: backbone × benchmark × method × round (R1 = round 0), Agent ACC and
    Vote ACC mean and sample SD over the runs."""
    rows = []
    for (backbone, method), runs in cells.items():
        for bench in order:
            have = [r[bench] for r in runs.values() if bench in r]
            for t in range(min((len(h["agent"]) for h in have), default=0)):
                agent = _spread([h["agent"][t] for h in have if math.isfinite(h["agent"][t])])
                vote = _spread([h["vote"][t] for h in have if math.isfinite(h["vote"][t])])
                rows.append({"backbone": backbone, "benchmark": bench, "method": method, "round": f"R{t + 1}",
                             "seeds": agent["seeds"], "agent_acc": agent["mean"], "agent_acc_sd": agent["sd"],
                             "vote_acc": vote["mean"], "vote_acc_sd": vote["sd"]})
    rank = {m: i for i, m in enumerate(methods)}
    return sorted(rows, key=lambda r: (r["backbone"], order.index(r["benchmark"]), rank.get(r["method"], len(rank)),
                                       r["method"], int(r["round"][1:])))


def composition_rows(cells: Mapping[tuple[str, str], Mapping[str, Mapping[str, dict]]], order: Sequence[str],
                     methods: Sequence[str]) -> list[dict]:
    """Tables 7–9 in long form: backbone × benchmark × method × R1 group, last-round Agent ACC mean and
    sample SD over the runs that have the group, and its question count per run (mean, min, max)."""
    rows = []
    rank = {m: i for i, m in enumerate(methods)}
    for (backbone, method), runs in sorted(cells.items(), key=lambda kv: (kv[0][0], rank.get(kv[0][1], len(rank)),
                                                                           kv[0][1])):
        for bench in order:
            have = [r[bench]["groups"] for r in runs.values() if bench in r and r[bench].get("groups")]
            if not have:
                continue
            for group in GROUPS:
                ns = [h[group]["n"] for h in have]
                acc = _spread([h[group]["agent"] for h in have if h[group]["n"] and math.isfinite(h[group]["agent"])])
                rows.append({"backbone": backbone, "benchmark": bench, "method": method, "group": group,
                             "seeds": acc["seeds"], "questions_mean": sum(ns) / len(ns), "questions_min": min(ns),
                             "questions_max": max(ns), "agent_acc": acc["mean"], "agent_acc_sd": acc["sd"]})
    return sorted(rows, key=lambda r: (r["backbone"], order.index(r["benchmark"])))


def cell(mean: float | None, sd: float | None, seeds: int) -> str:
    """``mean ± SD``; one seed: ``mean ± n/a`` (a single run has no SD, which is not 0); no value: –."""
    if mean is None:
        return "–"
    return f"{fmt(mean)} ± {fmt(sd) if sd is not None and seeds > 1 else NA}"


def _bold_best(rows: list[list[str]], means: list[list[float | None]]) -> None:
    """Bold the highest mean in each column (the paper marks the best method)."""
    for j in range(len(means[0]) if means else 0):
        col = [m[j] for m in means]
        top = max((v for v in col if v is not None), default=None)
        for i, v in enumerate(col):
            if top is not None and v is not None and round(v, 2) == round(top, 2):
                rows[i][j + 1] = f"**{rows[i][j + 1]}**"


def table1_markdown(rows: list[dict], order: Sequence[str], label) -> str:
    """Table 1: per backbone, a row per method; Agent ACC and Vote ACC per benchmark and their Avg."""
    out = []
    cols = [*order, AVG]
    head = ["Method"] + [f"{_bench_label(b)} {k}" for b in cols for k in ("Agent ACC", "Vote ACC")]
    for backbone in dict.fromkeys(r["backbone"] for r in rows):
        mine = [r for r in rows if r["backbone"] == backbone]
        body, means = [], []
        for method in dict.fromkeys(r["method"] for r in mine):
            by = {r["benchmark"]: r for r in mine if r["method"] == method}
            line, vals = [label(method)], []
            for b in cols:
                r = by.get(b)
                for k in ("agent_acc", "vote_acc"):
                    line.append(cell(r[k], r[f"{k}_sd"], r["seeds"]) if r else "–")
                    vals.append(r[k] if r else None)
            body.append(line)
            means.append(vals)
        _bold_best(body, means)
        seeds = max(r["seeds"] for r in mine)
        n = {b: r["questions"] for r in mine for b in order if r["benchmark"] == b}
        out.append(f"## {backbone}\n\n" + markdown(head, body)
                   + f"\nAccuracy (%) at the last round, mean ± sample SD over {seeds} seed(s)"
                   + (" (one seed: no SD, shown as n/a)" if seeds < 2 else "") + "; questions per benchmark: "
                   + ", ".join(f"{_bench_label(b)} {n[b]}" for b in order if b in n) + ".\n")
    return "\n".join(out)


def gains_markdown(rows: list[dict], label) -> str:
    """Each TrueMAD method's Avg. gain over its matched baseline, beside the paper's published one."""
    avg = {(r["backbone"], r["method"]): r for r in rows if r["benchmark"] == AVG}
    lines = []
    for (method, base), (pa, pv) in PUBLISHED_GAINS.items():
        for backbone in dict.fromkeys(b for b, _ in avg):
            a, b = avg.get((backbone, method)), avg.get((backbone, base))
            if a and b and None not in (a["agent_acc"], b["agent_acc"], a["vote_acc"], b["vote_acc"]):
                lines.append([backbone, f"{label(method)} − {label(base)}", fmt(a["agent_acc"] - b["agent_acc"], True),
                              fmt(a["vote_acc"] - b["vote_acc"], True), fmt(pa, True), fmt(pv, True)])
    if not lines:
        return ""
    return ("\n## Gain over the matched baseline (Avg.)\n\n"
            + markdown(["Backbone", "Comparison", "Agent ACC Δ", "Vote ACC Δ", "Paper: Agent ACC Δ", "Paper: Vote ACC Δ"],
                       lines)
            + "\nPaper: the averaged improvements the TrueMAD summary quotes (§4.2, Qwen3-30B-A3B).\n")


def rounds_markdown(rows: list[dict], order: Sequence[str], label) -> str:
    """Tables 4–6: per backbone and benchmark, Agent ACC per round from R2 on, mean ± sample SD."""
    out = []
    for backbone in dict.fromkeys(r["backbone"] for r in rows):
        for bench in order:
            mine = [r for r in rows if r["backbone"] == backbone and r["benchmark"] == bench and r["round"] != "R1"]
            if not mine:
                continue
            rounds = list(dict.fromkeys(r["round"] for r in mine))
            body, means = [], []
            for method in dict.fromkeys(r["method"] for r in mine):
                by = {r["round"]: r for r in mine if r["method"] == method}
                body.append([label(method)] + [cell(by[t]["agent_acc"], by[t]["agent_acc_sd"], by[t]["seeds"])
                                               if t in by else "–" for t in rounds])
                means.append([by[t]["agent_acc"] if t in by else None for t in rounds])
            _bold_best(body, means)
            title = f"Table {ROUND_TABLES[bench]}" if bench in ROUND_TABLES else "Round-wise Agent ACC"
            out.append(f"## {title}: {_bench_label(bench)}, {backbone}\n\n" + markdown(["Method", *rounds], body))
    return "\n".join(out)


def compositions_markdown(rows: list[dict], order: Sequence[str], label) -> str:
    """Tables 7–9: per backbone and benchmark, a row per method, last-round Agent ACC per R1 group."""
    out = []
    for backbone in dict.fromkeys(r["backbone"] for r in rows):
        for bench in order:
            mine = [r for r in rows if r["backbone"] == backbone and r["benchmark"] == bench]
            if not mine:
                continue
            body, means = [], []
            for method in dict.fromkeys(r["method"] for r in mine):
                by = {r["group"]: r for r in mine if r["method"] == method}
                body.append([label(method)] + [cell(by[g]["agent_acc"], by[g]["agent_acc_sd"], by[g]["seeds"])
                                               for g in GROUPS])
                means.append([by[g]["agent_acc"] for g in GROUPS])
            _bold_best(body, means)
            sizes = "; ".join(f"{label(m)}: " + ", ".join(_count(by_m[g]) for g in GROUPS)
                              for m in dict.fromkeys(r["method"] for r in mine)
                              for by_m in [{r["group"]: r for r in mine if r["method"] == m}])
            title = f"Table {COMPOSITION_TABLES[bench]}" if bench in COMPOSITION_TABLES else "By R1 composition"
            out.append(f"## {title}: {_bench_label(bench)}, {backbone}\n\n" + markdown(["Method", *GROUPS.values()], body)
                       + f"\nQuestions per group (per run; a range where the runs differ), in column order — {sizes}.\n")
    return "\n".join(out)


def _count(row: dict) -> str:
    lo, hi = row["questions_min"], row["questions_max"]
    return str(lo) if lo == hi else f"{lo}–{hi}"


def _bench_label(bench: str) -> str:
    return "Avg." if bench == AVG else BENCHMARKS.get(bench, bench)


# ---- Tables 10-11: process-level scores (§4.3, §B.3) ----
#
# Per run (a backbone's seed), method and benchmark (its datasets' questions pooled, as Table 1):
# RP / EI / NC the mean rubric score of the scored debate replies (lmad.studies.process.metrics'
# rubric, shown only when its judge passed its battery), and CPL / AME / CMP1v(K-1) of
# lmad.paper.dynamics.dynamics over the pooled questions; each cell the mean ± sample SD over the runs.

#: the paper's process tables (§B.3): Table 10 the rubric dimensions, Table 11 the transitions
PROCESS_TABLES = {10: ("rp", "ei", "nc"), 11: ("cpl", "ame", "cmp")}
PROCESS_LABELS = {"rp": "RP", "ei": "EI", "nc": "NC", "cpl": "CPL", "ame": "AME (pp)", "cmp": "CMP1v3 (%)"}
PROCESS_METRICS = [m for ms in PROCESS_TABLES.values() for m in ms]
#: §4.3 / Figure 3: the AIME CPL cells the summary quotes, (method) -> CPL (Table 11)
PUBLISHED_CPL_AIME = {"mad": 0.85, "truemad": 1.96, "dmad-manners": 0.80, "truedmad": 1.01}
#: the matched comparisons §4.3 reads (each TrueMAD method against its base protocol)
MATCHED = (("truemad", "mad"), ("truedmad", "dmad-manners"))


def process_pooled(per_dataset: Mapping[str, Mapping[str, Rounds]], replies: Mapping[str, Sequence[Mapping]],
                   benchmarks: Mapping[str, str]) -> dict[str, dict]:
    """{benchmark: {"n", "k", "cpl", "ame", "cmp", "replies", "scored", "rp", "ei", "nc"}} of one run and
    method: each benchmark's questions (``per_dataset``: {dataset: {qid: Rounds}}) and rubric rows
    (``replies``: {dataset: process_scores rows}) pooled over its datasets."""
    from ..studies.process.metrics import rubric_summary
    from .dynamics import dynamics

    questions: dict[str, dict] = {}
    for dataset, per_q in per_dataset.items():
        questions.setdefault(benchmarks.get(dataset, dataset), {}).update({(dataset, q): rs for q, rs in per_q.items()})
    rows: dict[str, list] = {}
    for dataset, rs in replies.items():
        rows.setdefault(benchmarks.get(dataset, dataset), []).extend(rs)
    out = {}
    for bench in dict.fromkeys([*questions, *rows]):
        qs = questions.get(bench, {})
        d = dynamics(qs) if qs else {}
        k = max((len(r[0][0]) for r in qs.values() if r), default=0)
        s = rubric_summary(rows.get(bench, []))
        out[bench] = {"n": len(qs), "k": k, "cpl": d.get("cpl", math.nan), "ame": d.get("ame", math.nan),
                      "cmp": d.get("cmp_1vK", math.nan), "replies": s["replies"], "scored": s["scored"],
                      **{m: s[m] for m in ("rp", "ei", "nc")}}
    return out


def process_cells(scores: Mapping[tuple[str, str, str], Mapping[str, Rounds]],
                  replies: Mapping[tuple[str, str, str], Sequence[Mapping]],
                  benchmarks: Mapping[str, str]) -> dict[tuple[str, str], dict[str, dict[str, dict]]]:
    """``{(run, dataset, method): {qid: Rounds}}`` and ``{(run, dataset, method): rubric rows}`` →
    ``{(backbone, method): {run: process_pooled(...)}}``."""
    grouped: dict[tuple[str, str], dict[str, tuple[dict, dict]]] = {}
    for (run, dataset, method), per_q in scores.items():
        grouped.setdefault((layout.model_of(run), method), {}).setdefault(run, ({}, {}))[0][dataset] = per_q
    for (run, dataset, method), rows in replies.items():
        grouped.setdefault((layout.model_of(run), method), {}).setdefault(run, ({}, {}))[1][dataset] = rows
    return {key: {run: process_pooled(q, r, benchmarks) for run, (q, r) in runs.items()}
            for key, runs in grouped.items()}


def _finite(values) -> list[float]:
    return [float(v) for v in values if v is not None and math.isfinite(float(v))]


def process_rows(cells: Mapping[tuple[str, str], Mapping[str, Mapping[str, dict]]], order: Sequence[str],
                 methods: Sequence[str], rubric_shown: bool = True) -> list[dict]:
    """Tables 10–11 in long form: one row per backbone × method × benchmark, each metric's mean and
    sample SD over the runs where it is defined (``{metric}_seeds`` of them); a CPL that is infinite in
    some run (corrections, no corruption) is counted in ``cpl_inf`` and left out of the mean. The rubric
    means are None unless ``rubric_shown`` (its judge passed its battery)."""
    rank = {m: i for i, m in enumerate(methods)}
    rows = []
    for (backbone, method), runs in sorted(cells.items(), key=lambda kv: (list(dict.fromkeys(
            b for b, _ in cells)).index(kv[0][0]), rank.get(kv[0][1], len(rank)), kv[0][1])):
        for bench in order:
            have = [r[bench] for r in runs.values() if bench in r]
            if not have:
                continue
            row = {"backbone": backbone, "method": method, "benchmark": bench, "seeds": len(have),
                   "questions": max(h["n"] for h in have), "k": max(h["k"] for h in have),
                   "replies": sum(h["replies"] for h in have), "scored": sum(h["scored"] for h in have),
                   "cpl_inf": sum(h["cpl"] == math.inf for h in have)}
            for m in PROCESS_METRICS:
                vals = _finite(h[m] for h in have) if (rubric_shown or m not in PROCESS_TABLES[10]) else []
                mean, sd = mean_sd(vals)
                row |= {m: mean, f"{m}_sd": sd, f"{m}_seeds": len(vals)}
            rows.append(row)
    return rows


def matched_deltas(rows: Sequence[Mapping]) -> list[dict]:
    """Each matched comparison (TrueMAD − MAD, TrueDMAD − DMAD) per backbone and benchmark: the
    difference of the two methods' mean of every metric (None where either is undefined)."""
    by = {(r["backbone"], r["method"], r["benchmark"]): r for r in rows}
    out = []
    for backbone in dict.fromkeys(r["backbone"] for r in rows):
        for method, base in MATCHED:
            for bench in dict.fromkeys(r["benchmark"] for r in rows):
                a, b = by.get((backbone, method, bench)), by.get((backbone, base, bench))
                if a and b:
                    out.append({"backbone": backbone, "method": method, "baseline": base, "benchmark": bench,
                                **{m: None if a[m] is None or b[m] is None else a[m] - b[m]
                                   for m in PROCESS_METRICS}})
    return out


def process_markdown(rows: list[dict], order: Sequence[str], label, table: int, rubric_note: str = "") -> str:
    """Table 10 (RP / EI / NC) or 11 (CPL / AME / CMP1v(K−1)): per backbone, a row per method, the
    table's metrics per benchmark, mean ± sample SD over the runs; bold the highest mean of a column."""
    from ..studies.process.metrics import cmp_name

    metrics = PROCESS_TABLES[table]
    out = []
    for backbone in dict.fromkeys(r["backbone"] for r in rows):
        mine = [r for r in rows if r["backbone"] == backbone]
        benches = [b for b in order if any(r["benchmark"] == b for r in mine)]
        ks = {r["k"] for r in mine if r["k"]}
        labels = {**PROCESS_LABELS, "cmp": f"{cmp_name(ks.pop())} (%)" if len(ks) == 1 else "CMP1v(K−1) (%)"}
        head = ["Method"] + [f"{_bench_label(b)} {labels[m]}" for b in benches for m in metrics]
        body, means = [], []
        for method in dict.fromkeys(r["method"] for r in mine):
            by = {r["benchmark"]: r for r in mine if r["method"] == method}
            line, vals = [label(method)], []
            for b in benches:
                r = by.get(b)
                for m in metrics:
                    text = cell(r[m], r[f"{m}_sd"], r[f"{m}_seeds"]) if r else "–"
                    if r and m == "cpl" and r["cpl_inf"]:
                        text += f" (∞ in {r['cpl_inf']} seed(s))"
                    line.append(text)
                    vals.append(r[m] if r else None)
            body.append(line)
            means.append(vals)
        _bold_best(body, means)
        seeds = max(r["seeds"] for r in mine)
        out.append(f"## Table {table}: {backbone}\n\n" + (rubric_note + "\n\n" if rubric_note else "")
                   + markdown(head, body) + f"\nMean ± sample SD over {seeds} seed(s)"
                   + (" (one seed: no SD, shown as n/a)" if seeds < 2 else "") + ".\n")
    return "\n".join(out)


def deltas_markdown(deltas: list[dict], order: Sequence[str], label, rubric_shown: bool) -> str:
    """The matched comparisons of §4.3, one line per backbone × comparison × benchmark."""
    shown = [m for m in PROCESS_METRICS if rubric_shown or m not in PROCESS_TABLES[10]]
    body = [[d["backbone"], f"{label(d['method'])} − {label(d['baseline'])}", _bench_label(d["benchmark"]),
             *(fmt(d[m], True) for m in shown)] for d in sorted(deltas, key=lambda d: order.index(d["benchmark"])
                                                                if d["benchmark"] in order else len(order))]
    if not body:
        return ""
    return ("\n## Matched comparisons\n\n"
            + markdown(["Backbone", "Comparison", "Benchmark",
                        *(("CMP (%)" if m == "cmp" else PROCESS_LABELS[m]) + " Δ" for m in shown)], body)
            + "\nDifference of the two methods' means (§4.3 reads TrueMAD against MAD and TrueDMAD against DMAD).\n")
