"""Rules ``paper_readout`` and ``paper_headroom_lift`` (rules.smk): the round-level
controls, the finalizers' readout accounting and the headroom–lift scatter, from saved Parquet
only (no model calls). Library: ``lmad.paper.readout``; figures: matplotlib, Agg."""
from __future__ import annotations

import logging
import math
from collections import defaultdict

import polars as pl

from lmad import layout
from lmad.atomic import write_csv, write_text
from lmad.number_format import fmt, markdown
from lmad.paper import label
from lmad.paper import readout as ro
from lmad.plotting import pyplot, save
from lmad.registry import METHODS
from lmad.schemas import read_table
from lmad.societies import held_out_note
from lmad.stages.societies import held_out as held_out_rows
from lmad.stages.paper import load
from lmad.stages.units import read_golds

log = logging.getLogger(__name__)

FINALIZER_LABELS = {"vote": "vote", "vote_judge": "vote→judge", "lvd": "LVD"}


def method_costs(round_samples: list[str], round_steps: list[str], traces: list[str],
                 votes: list[str], methods: list[str]) -> ro.Costs:
    """Per (backbone, dataset, method): {qid: (calls, generated tokens)} of each round's own calls
    (not cumulative): debate rounds' answers and other steps, LMAD trace rows by iteration, a voting
    method's samples (SC: the proposals; ``methods`` says which method votes over which stage)."""
    per: dict[tuple, dict[int, dict[str, list[int]]]] = defaultdict(lambda: defaultdict(lambda: defaultdict(
        lambda: [0, 0])))

    def add(key, t, rows):
        for r in rows:
            cell = per[key][t][r["qid"]]
            cell[0] += r.get("calls", 1)
            cell[1] += r["completion_tokens"]

    for p in [*round_samples, *round_steps]:
        at = layout.parse(p)
        add((at.backbone, at.dataset, at.method), at.round,
            read_table("samples" if at.part == "" else "debate_steps", p).to_dicts())
    for p in traces:
        at = layout.parse(p)
        for r in read_table("lmad_trace", p).to_dicts():
            add((at.backbone, at.dataset, at.method), r["iteration"], [r])
    for p in votes:
        at = layout.parse(p)
        for m in methods:
            if METHODS[m].samples == at.stage:
                add((at.backbone, at.dataset, m), 0, read_table("samples", p).to_dicts())
    return {key: [{q: tuple(v) for q, v in rounds[t].items()} for t in range(max(rounds) + 1)]
            for key, rounds in per.items()}


STYLES = {"vote": "-", "vote_judge": "--", "lvd": ":"}


def _figure_readout(frame: pl.DataFrame, cells: list[dict], png: str, backbones: list[str],
                    order: list[str]) -> None:
    plt = pyplot()
    avg = frame.filter(pl.col("dataset") == ro.AVG) if not frame.is_empty() else frame
    rows = max(len(backbones), 1)
    fig, axes = plt.subplots(rows, 2, figsize=(10, 3.2 * rows), squeeze=False)
    own = defaultdict(list)
    for c in cells:
        own[(c["backbone"], c["method"])].append(c["final_em"])
    for i, b in enumerate(backbones):
        left, right = axes[i]
        sub = avg.filter(pl.col("backbone") == b) if not avg.is_empty() else avg
        present = set(sub["method"].to_list()) if not sub.is_empty() else set()
        methods = [m for m in order if m in present]
        for k, m in enumerate(methods):
            for f in [f for f in FINALIZER_LABELS if f in set(sub["finalizer"].to_list())]:
                line = sub.filter((pl.col("method") == m) & (pl.col("finalizer") == f)).sort("round")
                left.plot(line["round"].to_list(), line["gain"].to_list(), marker="o", ms=3, color=f"C{k}",
                          ls=STYLES.get(f, "-"), label=f"{label(m)} · {FINALIZER_LABELS.get(f, f)}")
        left.xaxis.get_major_locator().set_params(integer=True)
        left.axhline(0, color="grey", lw=0.8)
        left.set_xlabel("round (LMAD: iteration)")
        left.set_ylabel("EM − R0 vote (pp)")
        left.set_title(f"{b}: round-level accuracy relative to the R0 vote")
        if methods:
            left.legend(fontsize=6, ncol=2)
        bars = ["R0 proposal hit", "R0 vote", "last round: vote", "last round: vote→judge", "last round: LVD",
                "own final"]
        width = 0.8 / len(bars)
        for j, m in enumerate(methods):
            msub = sub.filter(pl.col("method") == m)
            last = msub.filter(pl.col("round") == msub["round"].max())
            r0 = msub.filter(pl.col("round") == 0).row(0, named=True)

            def at_last(f):
                hit = last.filter(pl.col("finalizer") == f)
                return hit["final_em"][0] if len(hit) else math.nan

            values = [r0["hit_rate"], r0["vote_acc"], at_last("vote"), at_last("vote_judge"), at_last("lvd"),
                      sum(own[(b, m)]) / len(own[(b, m)]) if own[(b, m)] else math.nan]
            for k, v in enumerate(values):
                right.bar(j + k * width, v, width, color=f"C{k}", label=bars[k] if j == 0 else None)
        right.set_xticks([j + 0.4 - width / 2 for j in range(len(methods))], [label(m) for m in methods], fontsize=7)
        right.set_ylabel("EM (%)")
        right.set_ylim(0, 100)
        right.set_title(f"{b}: proposal hit vs vote vs final")
        if methods:
            right.legend(fontsize=6)
    fig.tight_layout()
    save(fig, png, title="Readout")


def readout_table(questions: list[str], finalized: list[str], predictions: list[str], round_samples: list[str],
                  round_steps: list[str], traces: list[str], votes: list[str], csv: str, md: str, png: str,
                  backbones: list[str], methods: list[str], provenance: dict, held_out: list[str] = (),
                  held_out_size: int | None = None) -> None:
    golds = read_golds(questions)
    fin = held_out_rows(load("finalized", finalized), held_out)  # societies on: the held-out questions only
    costs = method_costs(round_samples, round_steps, traces, list(dict.fromkeys(votes)), methods)
    frame = ro.with_own_r0(ro.with_average(ro.readout_rows(fin, golds, costs)))
    write_csv(csv, frame)
    cells = ro.lift_cells(fin, held_out_rows(load("predictions", predictions), held_out), golds)
    _figure_readout(frame, cells, png, backbones, methods)
    if frame.is_empty():
        write_text(md, "**No finalized round in this run: nothing to read out.**\n")
        return
    avg = frame.filter(pl.col("dataset") == ro.AVG)
    header = ["Backbone", "Method", "Round", "Finalizer", "EM", "Δ vs R0 vote", "Δ vs own R0", "Hit at round", "Recovered",
              "New-correct", "Damage", "Overturns (right / wrong)", "Ties", "Calls / q", "Gen. tokens / q"]
    out = []
    for b in backbones:
        for m in methods:
            sub = avg.filter((pl.col("backbone") == b) & (pl.col("method") == m)).to_dicts()
            for r in sorted(sub, key=lambda r: (r["round"], list(FINALIZER_LABELS).index(r["finalizer"]))):
                out.append([b, label(m), f"R{r['round']}", FINALIZER_LABELS.get(r["finalizer"], r["finalizer"]),
                            fmt(r["final_em"]), fmt(r["gain"], signed=True), fmt(r["gain_own_r0"], signed=True),
                            fmt(r["round_hit_rate"]),
                            fmt(r["recovered"]), fmt(r["new_correct"]), fmt(r["damage"]),
                            f"{fmt(r['overturns'])} ({fmt(r['overturns_correct'])} / {fmt(r['overturns_wrong'])})",
                            fmt(r["tie_rate"]), fmt(r["calls_per_q"]), fmt(r["completion_tokens_per_q"])])
    write_text(md, "# Round-level controls and readout (official EM; the answer type's rule for numbers, expressions "
               "and letters)\n\n" + markdown(header, out)
               + "\n% of questions, macro-averaged over datasets (per-dataset rows in readout.csv). Each row applies one "
               "finalizer to one saved round of one method (LMAD: iteration; a question that stopped earlier keeps its "
               "stop round's answers). Δ = EM − the method's own R0 vote = recovered + new-correct − damage "
               "(asserted on every row); Δ vs own R0 = EM − the same finalizer's EM at R0 (When Debate Helps §A.10: a "
               "finalizer applied to every saved round, against its own R0 result). Overturns: the finalizer's answer "
               "differs from that round's majority vote; "
               "right = correct where the vote was wrong, wrong = incorrect where the vote was right. Calls and "
               "generated tokens per question: the method's calls through that round plus the finalizer's own "
               "(tie judge: only on ties; LVD: one verifier call per distinct candidate, none when all agree).\n"
               + held_out_note(methods, held_out_size))
    log.info("readout: %d rows (%d finalized files)", len(frame), len(finalized))


def headroom_lift(questions: list[str], finalized: list[str], predictions: list[str], csv: str, md: str, png: str,
                  provenance: dict, held_out: list[str] = (), held_out_size: int | None = None) -> None:
    """The headroom–lift scatter across cells (backbone × dataset × method), Pearson and Spearman;
    ``held_out``: the runs' society splits (societies on): the held-out questions only."""
    golds = read_golds(questions)
    cells = ro.lift_cells(held_out_rows(load("finalized", finalized), held_out),
                          held_out_rows(load("predictions", predictions), held_out), golds)
    corr = ro.correlations(cells)
    write_csv(csv, pl.DataFrame(cells) if cells else pl.DataFrame({c: [] for c in (
        "backbone", "dataset", "method", "n", "headroom", "hit_rate", "vote_acc", "final_em", "lift")}))
    rows = [[c["backbone"], label(c["dataset"]), label(c["method"]), fmt(c["headroom"]), fmt(c["vote_acc"]),
             fmt(c["final_em"]), fmt(c["lift"], signed=True)] for c in cells]
    stat = (f"Pearson r = {fmt(corr['pearson_r'])} (p = {fmt(corr['pearson_p'])}), Spearman ρ = "
            f"{fmt(corr['spearman_rho'])} (p = {fmt(corr['spearman_p'])}) across {corr['n_cells']} cells"
            + (f" — {corr['note']}" if corr["note"] else "") + ".")
    write_text(md, "# Headroom vs lift (official EM or the answer type's rule)\n\n" + markdown(
        ["Backbone", "Dataset", "Method", "R0 headroom", "R0 vote", "Final", "Lift"], rows)
        + f"\n{stat}\nHeadroom = some round-0 answer correct but the round-0 vote wrong; lift = the method's own "
        "final EM − its round-0 vote EM (percentage points).\n"
        + held_out_note(sorted({c["method"] for c in cells}), held_out_size))
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(4.5, 3.5))
    for k, m in enumerate(sorted({c["method"] for c in cells})):
        pts = [c for c in cells if c["method"] == m]
        ax.scatter([c["headroom"] for c in pts], [c["lift"] for c in pts], color=f"C{k}", label=label(m), s=18)
    ax.axhline(0, color="grey", lw=0.8)
    ax.set_xlabel("R0 proposal headroom (%)")
    ax.set_ylabel("final lift over R0 vote (pp)")
    ax.set_title(f"r = {fmt(corr['pearson_r'])}, ρ = {fmt(corr['spearman_rho'])} ({corr['n_cells']} cells)")
    if cells:
        ax.legend(fontsize=6)
    fig.tight_layout()
    save(fig, png, title="Headroom vs lift")
