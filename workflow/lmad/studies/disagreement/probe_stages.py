"""Rules ``probe`` and ``probe_table``: layer D of the disagreement layers (lmad.studies.disagreement.probe)."""
from __future__ import annotations

import logging
import math
from collections import defaultdict

import polars as pl

from lmad import layout
from lmad.atomic import write_csv, write_text
from lmad.backends import open_backend
from lmad.studies.disagreement.probe import CONDITIONS, LETTERS, cells, paired, read
from lmad.number_format import markdown
from lmad.paper import label
from lmad.plotting import pyplot, save
from lmad.schemas import read_table, write_table
from lmad.stats import mean_interval, wilson_interval

log = logging.getLogger(__name__)


def probe(questions: list[str], proposals: list[str], reads: str, model: dict, cache_dir: str, min_mass: float,
          provenance: dict) -> None:
    """Every probe cell of one backbone (its shared round-0 proposals, every dataset), all
    requests in one batch; a backend without next-token log-probabilities writes no read
    and says so in ``error``."""
    qs = {}
    for path in questions:
        qs.update({(q["dataset"], q["qid"]): q for q in read_table("questions", path).to_dicts()})
    by_question = defaultdict(list)
    for path in proposals:
        dataset = layout.parse(path).dataset
        for r in read_table("samples", path).to_dicts():
            by_question[(dataset, r["qid"])].append(r)
    jobs = [(d, c) for (d, qid), rows in sorted(by_question.items()) for c in cells(qs[(d, qid)], rows)]
    requests = [req for _, c in jobs for req in c["requests"]]
    error, logprobs = "", [None] * len(requests)
    backend = open_backend(model, cache_dir) if requests else None
    if backend is not None:
        try:
            logprobs = backend.next_token_logprobs(requests, LETTERS)
        except NotImplementedError as exc:
            error = str(exc)
            log.warning("layer D not measured: %s", exc)
    rows, k = [], 0
    for dataset, c in jobs:
        for condition in CONDITIONS:
            got = read(logprobs[k], min_mass)
            rows.append({"dataset": dataset, "qid": c["qid"], "agent": c["agent"], "opponent": c["opponent"],
                         "proposition": c["proposition"], "argument_words": c["argument_words"],
                         "condition": condition, "logprobs": None if logprobs[k] is None else list(logprobs[k]),
                         **got, "error": error})
            k += 1
    write_table("probe_reads", rows, reads, provenance)
    log.info("layer D: %d cells, %d reads (%d degenerate)%s; %s", len(jobs), len(rows),
             sum(r["degenerate"] for r in rows), f", not measured: {error}" if error else "",
             backend.stats() if backend else "no cell")


COLUMNS = ["backbone", "cells", "reads", "degenerate", "valid_cells", "error", "prior", "treat", "control", "shift",
           "shift_lo", "shift_hi", "toward_opponent", "toward_lo", "toward_hi", "margin_loss", "margin_lo",
           "margin_hi", "weakened", "weakened_lo", "weakened_hi"]


def probe_rows(reads: list[str]) -> list[dict]:
    rows = []
    for path in reads:
        backbone = layout.parse(path).backbone
        table = read_table("probe_reads", path).to_dicts()
        pairs = paired(table)
        shifts, losses = [p["shift"] for p in pairs], [p["margin_loss"] for p in pairs]
        n = len(pairs)
        row = {"backbone": backbone, "cells": len({(r["dataset"], r["qid"], r["agent"]) for r in table}),
               "reads": len(table), "degenerate": sum(r["degenerate"] for r in table), "valid_cells": n,
               "error": next((r["error"] for r in table if r["error"]), "")}
        for name, vals in (("prior", [p["prior"] for p in pairs]), ("treat", [p["treat"] for p in pairs]),
                           ("control", [p["control"] for p in pairs])):
            row[name] = mean_interval(vals)[0]
        row["shift"], row["shift_lo"], row["shift_hi"] = mean_interval(shifts)
        row["margin_loss"], row["margin_lo"], row["margin_hi"] = mean_interval(losses)
        toward, weakened = sum(s > 0 for s in shifts), sum(m > 0 for m in losses)
        row["toward_opponent"] = 100 * toward / n if n else math.nan
        row["toward_lo"], row["toward_hi"] = (100 * x for x in wilson_interval(toward, n)) if n else (math.nan,) * 2
        row["weakened"] = 100 * weakened / n if n else math.nan
        row["weakened_lo"], row["weakened_hi"] = (100 * x for x in wilson_interval(weakened, n)) if n else (math.nan,) * 2
        rows.append(row)
    return rows


def _f(x, pct=False) -> str:
    return "–" if x is None or not math.isfinite(x) else f"{x:.1f}" if pct else f"{x:.2f}"


def probe_table(reads: list[str], csv: str, md: str, png: str, min_mass: float, provenance: dict) -> None:
    """results/paper/probe.{csv,md,png}: per backbone, the expected stance (1-7) in each
    condition, the TREAT−CONTROL shift toward the opponent and the margin loss, with 95 %
    intervals, over the cells whose three reads are valid."""
    rows = probe_rows(reads)
    write_csv(csv, pl.DataFrame(rows).select(COLUMNS) if rows else pl.DataFrame(schema={c: pl.Utf8 for c in COLUMNS}))
    head = ["# Layer D: stance in the debater's own next-token distribution", "",
            "Per cell (a debater's round-0 answer X vs the first peer answering otherwise), the probe asks how much "
            "the model agrees that \"the answer to the question is X\" (A = strongly disagree … G = strongly agree) "
            "with no argument (prior), the peer's round-0 response in context (treat) and neutral filler of the same "
            "length in the same frame (control); the seven letters' probabilities are renormalized and read as the "
            f"expected stance E (1–7). A read whose letters hold under {min_mass:.0%} of the mass is degenerate and its "
            "cell is excluded. Shift = E(control) − E(treat): > 0 moved toward the opponent; margin loss = "
            "|E(control) − 4| − |E(treat) − 4|: > 0 weakened the stance. 95 % intervals (normal; Wilson for shares).",
            ""]
    header = ["Backbone", "Cells valid / all", "Degenerate reads", "E prior", "E treat", "E control",
              "Shift [95 % CI]", "Toward opponent %", "Margin loss [95 % CI]", "Weakened %"]
    body = []
    for r in rows:
        if r["error"]:
            body.append([r["backbone"], f"0 / {r['cells']}", "–", *["not measured"] * (len(header) - 3)])
            continue
        body.append([r["backbone"], f"{r['valid_cells']} / {r['cells']}", str(r["degenerate"]), _f(r["prior"]),
                     _f(r["treat"]), _f(r["control"]), f"{_f(r['shift'])} [{_f(r['shift_lo'])}, {_f(r['shift_hi'])}]",
                     f"{_f(r['toward_opponent'], True)} [{_f(r['toward_lo'], True)}, {_f(r['toward_hi'], True)}]",
                     f"{_f(r['margin_loss'])} [{_f(r['margin_lo'])}, {_f(r['margin_hi'])}]",
                     f"{_f(r['weakened'], True)} [{_f(r['weakened_lo'], True)}, {_f(r['weakened_hi'], True)}]"])
    notes = [f"- `{r['backbone']}`: not measured — {r['error']}" for r in rows if r["error"]]
    write_text(md, "\n".join(head) + "\n" + (markdown(header, body) if rows else "No backbone.\n")
               + ("\n" + "\n".join(notes) + "\n" if notes else ""))
    _figure(rows, png)
    log.info("probe table: %d backbones", len(rows))


def _figure(rows: list[dict], png: str) -> None:
    plt = pyplot(paper_style=False)
    shown = [r for r in rows if math.isfinite(r["shift"])]
    fig, ax = plt.subplots(figsize=(max(3.0, 1.2 * len(shown) + 1.5), 3.0))
    for i, r in enumerate(shown):
        for j, (key, lo, hi) in enumerate((("shift", "shift_lo", "shift_hi"), ("margin_loss", "margin_lo", "margin_hi"))):
            err = [[r[key] - r[lo]], [r[hi] - r[key]]] if math.isfinite(r[lo]) else None
            ax.bar(i + 0.4 * j, r[key], 0.4, yerr=err, color=f"C{j}",
                   label=("TREAT−CONTROL shift toward opponent", "margin loss")[j] if i == 0 else None)
    ax.axhline(0, color="grey", lw=0.8)
    ax.set_xticks([i + 0.2 for i in range(len(shown))], [label(r["backbone"]) for r in shown], fontsize=7)
    ax.set_ylabel("Likert points (1–7 scale)")
    ax.set_title("Layer D: argument vs length-matched filler" if shown else "Layer D: no valid cell")
    if shown:
        ax.legend(fontsize=6)
    fig.tight_layout()
    save(fig, png, title="Layer D probe")
