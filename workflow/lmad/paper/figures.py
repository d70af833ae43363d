"""Paper figures (matplotlib, Agg): PNG + PDF, deterministic (fixed metadata, no timestamps)."""
from __future__ import annotations

import math
import textwrap

import numpy as np
import polars as pl

from .. import layout
from ..answers import gold_correct, majority_vote
from ..plotting import pyplot, save
from ..registry import TRACE_FIGURE_METHODS
from ..stats import wilson_interval
from . import label


def accuracy_bar(k: float, n: int) -> tuple[float, float, float]:
    """Bar height and (below, above) error-bar lengths in percent, from the Wilson 95 % interval
    (lmad.stats.wilson_interval: exact 0 / 100 at 0 % / 100 %). The lengths are measured from
    the same bounds the interval returns, so they are never negative; a cell with no scored
    answer (n = 0) has no bar (NaN height) and no error bar."""
    if n == 0:
        return math.nan, 0.0, 0.0
    p = k / n
    lo, hi = wilson_interval(k, n)
    return 100 * p, max(100 * p - 100 * lo, 0.0), max(100 * hi - 100 * p, 0.0)


def accuracy(judged: pl.DataFrame, png: str, pdf: str, backbones, datasets, methods, head) -> None:
    """The headline metric (``judged["score"]``, ``head``: lmad.headline.Headline) per method and
    dataset, one panel per backbone; Wilson 95% CIs for 0/1 metrics (judge accuracy, EM), none for F1."""
    plt = pyplot()
    fig, axes = plt.subplots(len(backbones), 1, figsize=(2.6 + 1.4 * len(datasets), 2.6 * len(backbones)),
                             squeeze=False)
    width = 0.8 / max(len(methods), 1)
    for ax, b in zip(axes[:, 0], backbones):
        for i, m in enumerate(methods):
            ys, lo, hi = [], [], []
            for d in datasets:
                v = judged.filter((pl.col("backbone") == b) & (pl.col("dataset") == d) & (pl.col("method") == m))
                v = v["score"] if len(v) else pl.Series([], dtype=pl.Float64)
                if head.metric == "f1":  # a mean of F1 scores is no proportion: no Wilson interval
                    p, below, above = (100 * float(v.mean()) if len(v) else math.nan), 0.0, 0.0
                else:
                    p, below, above = accuracy_bar(float(v.sum()) if len(v) else 0.0, len(v))
                ys.append(p)
                lo.append(below)
                hi.append(above)
            x = np.arange(len(datasets)) + (i - (len(methods) - 1) / 2) * width
            ax.bar(x, ys, width, yerr=[lo, hi], capsize=1.5, label=label(m), error_kw={"lw": 0.6})
        ax.set_xticks(np.arange(len(datasets)), [label(d) for d in datasets])
        ax.set_ylabel(head.axis)
        ax.set_ylim(0, 100)
        ax.set_title(f"{b}: {head.label}")
    axes[0, 0].legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.0, 1.0))
    _judge_note(fig, head)
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    save(fig, png, pdf, f"{head.label} per method and dataset")


def _judge_note(fig, head) -> None:
    """The judge's validation in plain words under the plot (the caption of the figure itself)."""
    text = head.warning or f"Headline metric: {head.label}. The judge passed validation."
    fig.text(0.01, 0.01, textwrap.fill(text, 150), fontsize=6, color="firebrick" if head.warning else "black",
             ha="left", va="bottom")


def pareto(judged: pl.DataFrame, preds: pl.DataFrame, png: str, pdf: str, backbones, datasets, methods,
           head) -> None:
    """Macro-averaged headline metric (``judged["score"]``) vs generated tokens per question; the
    Pareto front is drawn."""
    plt = pyplot()
    fig, axes = plt.subplots(1, len(backbones), figsize=(4 * len(backbones), 3.2), squeeze=False)
    for ax, b in zip(axes[0], backbones):
        pts = []
        for m in methods:
            acc = judged.filter((pl.col("backbone") == b) & (pl.col("method") == m)) \
                .group_by("dataset").agg(pl.col("score").mean())
            tok = preds.filter((pl.col("backbone") == b) & (pl.col("method") == m)) \
                .group_by("dataset").agg(pl.col("completion_tokens").cast(pl.Float64).mean())
            if len(acc) < len(datasets) or acc["score"].null_count() or tok.is_empty():
                continue  # no macro value without a score on every dataset (as Table 1)
            pts.append((float(tok["completion_tokens"].mean()), 100 * float(acc["score"].mean()), m))
        for x, y, m in pts:
            ax.scatter(x, y, s=18)
            ax.annotate(label(m), (x, y), fontsize=7, xytext=(3, 3), textcoords="offset points")
        front, best = [], -1.0
        for x, y, _ in sorted(pts):
            if y > best:
                front.append((x, y))
                best = y
        if front:
            ax.step(*zip(*front), where="post", color="grey", lw=0.8, ls="--")
        ax.set_xlabel("generated tokens / question")
        ax.set_ylabel(f"{head.short} (%, macro)")
        ax.set_title(b)
    _judge_note(fig, head)
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    save(fig, png, pdf, f"{head.label} vs generated tokens")


def round_accuracy(row: dict, n_rounds: int) -> list[dict]:
    """Agent-level and strict-majority accuracy per round of one method on one dataset, from its
    ``lmad.paper.dynamics.dynamics`` row (each question's answer type decides; a question that
    stopped early keeps its last answers) over its ``n_rounds`` rounds."""
    return [{"round": t, "agent_acc": row.get(f"agent_acc_r{t}", math.nan),
             "majority_acc": row.get(f"majority_acc_r{t}", math.nan), "n": row["n"]} for t in range(n_rounds)]


def group_rounds(paths: list[str]) -> dict[tuple[str, str, str], list[str]]:
    """round{t}.parquet files → {(backbone, dataset, method): paths in round order}."""
    groups: dict[tuple[str, str, str], list[tuple[int, str]]] = {}
    for p in paths:
        at = layout.parse(p)
        groups.setdefault((at.backbone, at.dataset, at.method), []).append((at.round, p))
    return {k: [p for _, p in sorted(v)] for k, v in sorted(groups.items())}


def rounds(per_dataset: list[tuple[tuple[str, str, str], dict, int]], png: str, pdf: str, backbones) -> None:
    """Round-wise accuracy of every debate method, macro-averaged over datasets. ``per_dataset``:
    ((backbone, dataset, method), its dynamics row, its number of rounds) for each of the run's
    debates (rule paper_dynamics computes the rows for its table and draws this figure from them)."""
    plt = pyplot()
    fig, axes = plt.subplots(1, len(backbones), figsize=(4 * len(backbones), 3.2), squeeze=False)
    curves: dict[tuple[str, str], list[list[dict]]] = {}
    for (b, _, m), row, n_rounds in per_dataset:
        curves.setdefault((b, m), []).append(round_accuracy(row, n_rounds))
    for ax, b in zip(axes[0], backbones):
        if not any(bb == b for bb, _ in curves):
            ax.text(0.5, 0.5, "no debate method in this run", ha="center", transform=ax.transAxes)
        for (bb, m), per_ds in sorted(curves.items()):
            if bb != b:
                continue
            n = min(len(c) for c in per_ds)
            xs = list(range(n))
            agent = [np.mean([c[t]["agent_acc"] for c in per_ds]) for t in xs]
            major = [np.mean([c[t]["majority_acc"] for c in per_ds]) for t in xs]
            line, = ax.plot(xs, agent, marker="o", ms=3, label=f"{label(m)} agent")
            ax.plot(xs, major, marker="s", ms=3, ls="--", color=line.get_color(), label=f"{label(m)} majority")
        ax.set_xlabel("round")
        ax.xaxis.get_major_locator().set_params(integer=True)
        ax.set_ylim(0, 100)
        ax.set_ylabel("accuracy (%, macro)")
        ax.set_title(b)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize="x-small")
    fig.tight_layout()
    save(fig, png, pdf, "round-wise accuracy")


def select_trace_questions(trace: pl.DataFrame, judged: pl.DataFrame, golds: dict, k: int,
                           method: str = "lmad") -> list[dict]:
    """LMAD questions whose initial majority was wrong and LMAD's answer right (official EM, or the
    answer type's own rule, so the pick never rests on an unvalidated judge); otherwise the first
    questions with a debate. ``method``: the LMAD method whose trace picks them."""
    if trace.is_empty():  # no LMAD trace in the run
        return []
    t = trace.filter(pl.col("method") == method).sort("backbone", "dataset", "qid", "iteration")
    ok = {(r["backbone"], r["dataset"], r["qid"]) for r in
          judged.filter((pl.col("method") == method) & (pl.col("em") == 1.0)).to_dicts()}
    debated, chosen = [], []
    for key, g in t.group_by("backbone", "dataset", "qid", maintain_order=True):
        first = g.row(0, named=True)
        if first["conflict"] is None:
            continue
        debated.append(g)
        gold = golds.get((key[1], key[2]))
        if key in ok and gold is not None and not gold_correct(majority_vote(first["answers"], gold.answer_type)[0], gold):
            chosen.append(g)
    picked = (chosen + [g for g in debated if not any(g is c for c in chosen)])[:k]
    return [{"backbone": g["backbone"][0], "dataset": g["dataset"][0], "qid": g["qid"][0], "method": method,
             "iterations": g.to_dicts()} for g in picked]


def _box(ax, x, y, text, color, w=2.6, h=0.8, lw=0.4):
    ax.add_patch(__import__("matplotlib.patches", fromlist=["FancyBboxPatch"]).FancyBboxPatch(
        (x, y - h / 2), w, h, boxstyle="round,pad=0.05", fc=color, ec="black", lw=lw))
    ax.text(x + w / 2, y, textwrap.shorten(text or "", 60), ha="center", va="center", fontsize=5, wrap=True)


def _segment_of(it: dict, agent: int) -> set[int]:
    """One-based claims of the agent's debated segment: its premise closure (graph LMAD), its prefix (chain)."""
    if it.get("segment_indices"):
        return set(it["segment_indices"][agent])
    return set(range(1, (it["witness"] or [0] * len(it["chains"]))[agent] + 1))


def _trace_panel(ax, q: dict, it: dict, hgt: int) -> None:
    """One method's first debated iteration: each agent's claims (committed state green, debated
    segment orange with the witnesses outlined, untouched grey), a graph method's premises as arcs
    from each premise to the claim that uses it, the conflict, the positions and the repair."""
    ax.set_xlim(-0.2, 3.2 * len(it["chains"]) + 3.4)
    ax.set_ylim(-(hgt - 1.5), 1.5)
    ax.axis("off")
    ax.text(0, 1.1, textwrap.shorten(f"{q['backbone']} / {label(q['dataset'])} / {q['qid']} / {label(it['method'])} "
                                     f"(iteration {it['iteration']}) — conflict: {it['conflict']}", 170),
            fontsize=6, weight="bold")
    for a, chain in enumerate(it["chains"]):
        x = 3.2 * a
        ax.text(x + 1.3, 0.45, f"agent {a}: {textwrap.shorten(it['answers'][a] or '', 30)}", ha="center", fontsize=6)
        y = 0.0
        for node in it["committed_before"] or []:
            _box(ax, x, y, node, "#9be39b")
            y -= 1
        segment = _segment_of(it, a)
        every = it.get("witnesses") or [[w] for w in it["witness"] or []]
        witnesses = set(every[a]) if a < len(every) else set()
        top = y
        for t, node in enumerate(chain, start=1):
            _box(ax, x, y, node, "#ffb35c" if t in segment else "#dddddd", lw=1.2 if t in witnesses else 0.4)
            y -= 1
        premises = (it.get("premises") or [[]] * len(it["chains"]))[a] or []
        for t, ps in enumerate(premises, start=1):
            for p in ps:  # an arc on the right edge, from premise p down to claim t, within the column gap
                bulge = min(0.1 + 0.05 * (t - p), 0.3)
                ax.annotate("", xy=(x + 2.65, top - (t - 1)), xytext=(x + 2.65, top - (p - 1)),
                            arrowprops={"arrowstyle": "->", "lw": 0.5, "color": "#444",
                                        "connectionstyle": f"arc3,rad={-2 * bulge / (t - p):.3f}"})
        pos = [p for p in (it["positions"] or [[]])[-1:][0]] if it["positions"] else []
        if a < len(pos):
            ax.text(x + 1.3, y - 0.1, textwrap.shorten("debate: " + (pos[a] or ""), 70), ha="center",
                    fontsize=5, style="italic")
    xr = 3.2 * len(it["chains"])
    verdict = {True: "admitted", False: "rejected", None: "no repair"}[it["admitted"]]
    ax.text(xr, 0.45, f"repair ({verdict})", fontsize=6, weight="bold")
    for j, node in enumerate(it["repair_nodes"] or []):
        _box(ax, xr, -j, node, "#9be39b" if it["admitted"] else "#f4a6a6", w=3.2)


def lmad_trace(trace: pl.DataFrame, judged: pl.DataFrame, golds: dict, png: str, pdf: str, k: int) -> None:
    """Figures 2–3 style: per selected question (picked on chain LMAD's trace, else on the first
    of ``TRACE_FIGURE_METHODS`` in the run) and each of those methods that debated it, the first
    debated iteration (``_trace_panel``); graph LMAD's panel draws its premises."""
    plt = pyplot()
    present = [m for m in TRACE_FIGURE_METHODS if not trace.is_empty() and (trace["method"] == m).any()]
    picked = select_trace_questions(trace, judged, golds, k, present[0]) if present else []
    panels = []
    for q in picked:
        for m in present:
            rows = (q["iterations"] if m == q["method"] else trace.filter(
                (pl.col("method") == m) & (pl.col("backbone") == q["backbone"]) & (pl.col("dataset") == q["dataset"])
                & (pl.col("qid") == q["qid"])).sort("iteration").to_dicts())
            it = next((i for i in rows if i["conflict"] is not None), None)
            if it is not None:
                panels.append((q, it, 3 + max([len(c) for c in it["chains"]] + [1]) + len(it["committed_before"] or [])))
    if not panels:
        fig, ax = plt.subplots(figsize=(4, 1))
        ax.axis("off")
        ax.text(0.5, 0.5, "no LMAD question with a localized conflict", ha="center")
        save(fig, png, pdf, "LMAD trace")
        return
    fig, axes = plt.subplots(len(panels), 1, figsize=(9, 0.55 * sum(h for _, _, h in panels)), squeeze=False)
    for ax, (q, it, hgt) in zip(axes[:, 0], panels):
        _trace_panel(ax, q, it, hgt)
    fig.tight_layout()
    save(fig, png, pdf, "LMAD trace")
