"""Rules of rules.smk (docs/studies.md "Process metrics"): the RP / EI / NC rubric scores of every
debate reply (one batch per backbone, the configured judge), and the process table with CPL /
AME / CMP of every debating method, LMAD included (lmad.studies.process.metrics)."""
from __future__ import annotations

import logging
import math
from collections import defaultdict

import numpy as np
import polars as pl

from lmad import layout
from lmad.atomic import write_csv, write_text
from lmad.backends import open_backend
from lmad.call_accounting import call_columns
from lmad.number_format import markdown
from lmad.paper.dynamics import correctness_by_round, dynamics
from lmad.studies.process.metrics import (DIMENSIONS, build_rubric_battery, cmp_name, parse_rubric, rubric_request,
                                          rubric_summary, rubric_validation_line, validate_rubric)
from lmad.prompts import load_prompt
from lmad.registry import method as registered_method
from lmad.schemas import read_table, write_table
from lmad.studies.disagreement.stages import debate_replies
from lmad.stages.judge import KnownAnswerBattery, validate_judge
from lmad.stages.units import read_golds

log = logging.getLogger(__name__)


def process_scores(questions: list[str], rounds: list[str], prompt: str, scores: str, model: dict, judge_name: str,
                   cache_dir: str, max_tokens: int, provenance: dict, lmad_localizations: list[str] | None = None,
                   lmad_positions: list[str] | None = None) -> None:
    """Every debate reply of rounds t >= 1 and every local-debate reply of one backbone, scored
    on the rubric in ONE batch. ``rounds``: the debate methods' round ``samples`` tables."""
    qs = {}
    for path in questions:
        qs.update({(q["dataset"], q["qid"]): q for q in read_table("questions", path).to_dicts()})
    jobs = debate_replies(rounds, lmad_localizations, lmad_positions)
    template = load_prompt(prompt)
    requests = [rubric_request(template, qs[(d, r["qid"])]["question"], r["parent"], r["own"], r["reply"], max_tokens)
                for d, _, _, r in jobs]
    backend = open_backend(model, cache_dir) if requests else None
    replies = backend.generate(requests) if backend else []
    rows = [{"dataset": dataset, "method": name, "qid": r["qid"], "iteration": k, "round": r["round"],
             "agent": r["agent"], "judge_model": judge_name, **_scores(reply), **call_columns(reply)}
            for (dataset, name, k, r), reply in zip(jobs, replies)]
    write_table("process_scores", rows, scores, provenance)
    log.info("rubric scores of %d replies (%d unscored); %s", len(rows), sum(r["rp"] is None for r in rows),
             backend.stats() if backend else "no replies")


def rubric_validation(questions: list[str], prompt: str, battery: str, validation: str, report: str, model: dict,
                      judge_name: str, cache_dir: str, max_tokens: int, questions_per_dataset: int,
                      min_recall: float, seed: int, provenance: dict) -> None:
    """Judge the rubric's authored battery (lmad.studies.process.metrics.build_rubric_battery) in one batch with
    exactly the request a real reply gets; write every item, the verdict and its report."""
    validate_judge(KnownAnswerBattery(
        title="Rubric judge validation", tables=("rubric_battery", "rubric_validation"),
        build=lambda qs: build_rubric_battery(qs, questions_per_dataset, seed),
        request=lambda template, it: rubric_request(template, it.question, it.parent, it.own, it.reply, max_tokens),
        row=lambda i, it, reply: {"dataset": it.dataset, "qid": it.qid, "dimension": it.dimension, "kind": it.kind,
                                  "parent": it.parent, "own": it.own, "reply": it.reply, **_scores(reply)},
        validate=validate_rubric, line=rubric_validation_line, table=_recalls),
        questions, prompt, model, judge_name, cache_dir, min_recall, battery, validation, report, provenance)


def _scores(reply) -> dict:
    """The rubric's scores of one reply, parsed strictly (null when it did not parse)."""
    label, error = parse_rubric(reply.text)
    return {**{d: label[d] if label else None for d in DIMENSIONS}, "raw": reply.text, "parse_error": error}


def _recalls(rows: list[dict], summary: dict) -> list[str]:
    """Per dimension: the mean scores of the high and the low items, and the recall on each."""
    lines = ["| Dimension | Items high / low | Mean score on high | Mean score on low | Recall high | Recall low |",
             "|---|---|---|---|---|---|"]
    for d in DIMENSIONS:
        cells = []
        for kind in ("high", "low"):
            scores = [r[d] for r in rows if r["dimension"] == d and r["kind"] == kind and r[d] is not None]
            cells.append(_fmt(sum(scores) / len(scores)) if scores else "–")
        n = [sum(r["dimension"] == d and r["kind"] == k for r in rows) for k in ("high", "low")]
        lines.append(f"| {d.upper()} | {n[0]} / {n[1]} | {cells[0]} | {cells[1]} | "
                     + " | ".join(_fmt(100 * summary[f"{d}_{k}"]) + " %" for k in ("high", "low")) + " |")
    return lines


def _transitions(golds: dict, states: list[str]) -> dict:
    """CPL / AME / CMP of one method over its datasets: per-dataset values, mean over datasets."""
    groups = defaultdict(list)
    for path in states:
        where = layout.parse(path)
        groups[where.dataset].append((where.round if where.round is not None else where.iteration, path))
    per = [dynamics(correctness_by_round(golds, [p for _, p in sorted(ps)])) for _, ps in sorted(groups.items())]
    k = max(read_table("samples", p)["agent"].n_unique() for p in states)

    def mean(key):
        vals = [float(r[key]) for r in per if r.get(key) is not None and not math.isnan(float(r[key]))]
        return float(np.mean(vals)) if vals else math.nan

    return {"k": k, "cpl": mean("cpl"), "ame": mean("ame"), "cmp": mean("cmp_1vK"), "cmp_name": cmp_name(k)}


COLUMNS = ["backbone", "method", "base", "tone", "replies", "scored", "unscored", "rubric_status", "rp", "rp_lo",
           "rp_hi", "ei", "ei_lo", "ei_hi", "nc", "nc_lo", "nc_hi", "k", "cpl", "ame", "cmp", "cmp_name"]
#: The rubric means are shown only when the judge PASSED its battery (rule rubric_validation);
#: a FAILED judge's (or, without a battery, an unvalidated one's) means are withheld (docs/studies.md
#: "Process metrics"); the scores stay in the process_scores tables.
UNVALIDATED = "unvalidated"


def _withheld(summary: dict) -> dict:
    return {k: (None if k.split("_")[0] in DIMENSIONS else v) for k, v in summary.items()}


def _fmt(x) -> str:
    return "–" if x is None or (isinstance(x, float) and not math.isfinite(x)) else f"{x:.2f}"


def rubric_status(validation: str, rubric_validation: list[str] | None = None) -> tuple[str, str]:
    """(status, note) of the rubric means: PASSED or FAILED by the rubric judge's battery
    (``rubric_validation``), else unvalidated; the note says why means are withheld, quoting the same
    model's answer-judging validation (``validation``) when there is no battery."""
    from lmad.headline import validation_line

    if rubric_validation:
        v = read_table("rubric_validation", rubric_validation[0]).to_dicts()[0]
        if v["passed"]:
            return "PASSED", f"> {rubric_validation_line(v)}"
        return "FAILED", (f"> **RP / EI / NC are not shown:** {rubric_validation_line(v)} Its scores are kept, per "
                          "reply, in the process_scores tables.")
    judge = read_table("judge_validation", validation).to_dicts()[0]
    return UNVALIDATED, (f"> **RP / EI / NC are not shown:** no known-answer battery validates the rubric judge "
                         f"`{judge['judge_model']}`, so its scores are unvalidated (kept, per reply, in the "
                         f"process_scores tables). The same model's answer-judging validation, for reference: "
                         f"{validation_line(judge)}")


def process_table(questions: list[str], scores: list[str], rounds: list[str], csv: str, md: str,
                  validation: str, provenance: dict, lmad_generate: list[str] | None = None,
                  rubric_validation: list[str] | None = None) -> None:
    """results/paper/process.{csv,md}: per backbone x method (a toned variant is its own), the
    rubric means with 95 % intervals (only when the rubric judge PASSED its battery,
    ``rubric_validation``; none given: unvalidated) and CPL / AME / CMP1v(K-1)."""
    golds = read_golds(questions)
    states = defaultdict(list)
    for path in [*rounds, *(lmad_generate or [])]:
        where = layout.parse(path)
        states[(where.backbone, where.method)].append(path)
    scored = defaultdict(list)
    for path in scores:
        backbone = layout.parse(path).backbone
        for r in read_table("process_scores", path).to_dicts():
            scored[(backbone, r["method"])].append(r)
    status, note = rubric_status(validation, rubric_validation)
    rows = []
    for cell in sorted(set(states) | set(scored)):
        spec = registered_method(cell[1])
        trans = _transitions(golds, states[cell]) if states.get(cell) else {
            "k": 0, "cpl": math.nan, "ame": math.nan, "cmp": math.nan, "cmp_name": ""}
        summary = rubric_summary(scored.get(cell, []))
        rows.append({"backbone": cell[0], "method": cell[1], "base": spec.base, "tone": spec.tone,
                     "rubric_status": status, **(summary if status == "PASSED" else _withheld(summary)), **trans})
    write_csv(csv, pl.DataFrame(rows).select(COLUMNS) if rows else pl.DataFrame(schema={c: pl.Utf8 for c in COLUMNS}))
    head = ["# Process metrics by method × tone", "", note, "",
            "RP / EI / NC: mean rubric score (1–10) over scored debate replies (rounds t ≥ 1; LMAD: local-debate "
            "replies), normal 95 % interval clipped to 1–10; unscored replies excluded and counted. CPL, AME (pp), "
            "CMP1v(K−1) (%): EM-based transitions between rounds (LMAD: iterations), mean over datasets — "
            "definitions in docs/studies.md \"Process metrics\".", ""]
    header = ["Backbone", "Method", "Tone", "Replies scored / unscored", "RP", "EI", "NC", "K", "CPL", "AME (pp)",
              "CMP"]
    body = [[r["backbone"], r["base"], r["tone"], f"{r['scored']} / {r['unscored']}",
             *(r["rubric_status"] if r[d] is None else
               f"{_fmt(r[d])} [{_fmt(r[d + '_lo'])}, {_fmt(r[d + '_hi'])}]" if math.isfinite(r[d]) else "–"
               for d in DIMENSIONS),
             str(r["k"]), _fmt(r["cpl"]), _fmt(r["ame"]),
             f"{r['cmp_name']} {_fmt(r['cmp'])}" if r["cmp_name"] else "–"] for r in rows]
    write_text(md, "\n".join(head) + "\n" + (markdown(header, body) if rows else "No debating method in this run.\n"))
    log.info("process table: %d cells", len(rows))
