"""Rules of rules/disagreement.smk (README "Disagreement layers"): layer B's validation on its
authored battery, layer B's labels of every debate reply (one batch per backbone), and the
disagreement table (layers A and B per method x tone x round). Layer A is asked inside the
debate rounds (``engine.self_reports``) and read here from their ``debate_steps`` tables."""
from __future__ import annotations

import logging
from collections import defaultdict

import polars as pl

from .. import layout
from ..atomic import write_csv, write_text
from ..backends import open_backend
from ..disagreement.labels import SELF_REPORT_STEP, parse_pushback
from ..disagreement.pushback import build_battery, pushback_request, replies_with_parents, validate, validation_line
from ..disagreement.tables import COLUMNS, disagreement_markdown, disagreement_rows
from ..prompts import load_prompt
from ..registry import method as registered_method
from ..schemas import read_table, write_table
from .judge import _call

log = logging.getLogger(__name__)


def _judged(reply) -> dict:
    label, error = parse_pushback(reply.text)
    return {"stance": label["stance"] if label else "", "move": label["move"] if label else "", "raw": reply.text,
            "parse_error": error, **_call(reply)}


def pushback_validation(questions: list[str], prompt: str, battery: str, validation: str, report: str, model: dict,
                        judge_name: str, cache_dir: str, max_tokens: int, questions_per_dataset: int,
                        min_recall: float, seed: int, provenance: dict) -> None:
    """Judge the authored battery (lmad.disagreement.pushback) in one batch with the exact
    request layer B sends; write every item, the two-sided verdict and its report."""
    qs = [q for path in questions for q in read_table("questions", path).to_dicts()]
    items = build_battery(qs, questions_per_dataset, seed)
    template = load_prompt(prompt)
    backend = open_backend(model, cache_dir) if items else None
    replies = backend.generate([pushback_request(template, it.parent, it.reply, max_tokens) for it in items]) \
        if backend else []
    rows = [{"dataset": it.dataset, "qid": it.qid, "item": i, "kind": it.kind, "variant": it.variant,
             "expected": it.expected, "parent": it.parent, "reply": it.reply, "judge_model": judge_name,
             **_judged(reply)} for i, (it, reply) in enumerate(zip(items, replies))]
    write_table("pushback_battery", rows, battery, provenance)
    summary = {"judge_model": judge_name, **validate(rows, min_recall)}
    write_table("pushback_validation", [summary], validation, provenance)
    lines = [f"# Pushback judge validation — `{judge_name}`\n", validation_line(summary) + "\n",
             "| Kind | Should be | Items | Judged agree | Judged partial | Judged disagree | Unparsable |",
             "|---|---|---|---|---|---|---|"]
    for kind, expected in (("rebuttal", "disagree"), ("endorsement", "agree")):
        mine = [r for r in rows if r["kind"] == kind]
        counts = [sum(r["stance"] == s for r in mine) for s in ("agree", "partial", "disagree", "")]
        lines.append(f"| {kind} | {expected} | {len(mine)} | " + " | ".join(map(str, counts)) + " |")
    write_text(report, "\n".join(lines) + "\n")
    log.info("%s; %s", validation_line(summary), backend.stats() if backend else "no items")


def pushback(rounds: list[str], prompt: str, labels: str, model: dict, judge_name: str, cache_dir: str,
             max_tokens: int, provenance: dict) -> None:
    """Layer B on every debate reply of rounds t >= 1 of every debate method (toned variants
    included) and dataset of one backbone, in ONE batch. ``rounds``: the methods' round
    ``samples`` tables (any order; each path names its dataset, method and round)."""
    by_unit = defaultdict(list)
    for path in rounds:
        where = layout.parse(path)
        by_unit[(where.dataset, where.method)] += read_table("samples", path).to_dicts()
    jobs = []
    for (dataset, name), samples in sorted(by_unit.items()):
        for r in replies_with_parents(registered_method(name).protocol, samples):
            jobs.append({"dataset": dataset, "method": name, **r})
    template = load_prompt(prompt)
    backend = open_backend(model, cache_dir) if jobs else None
    replies = backend.generate([pushback_request(template, j["parent"], j["reply"], max_tokens) for j in jobs]) \
        if backend else []
    rows = [j | {"judge_model": judge_name, **_judged(reply)} for j, reply in zip(jobs, replies)]
    write_table("pushback_labels", rows, labels, provenance)
    unparsed = sum(not r["stance"] for r in rows)
    log.info("labelled %d debate replies of %d (dataset, method) units (%d unparsable); %s", len(rows),
             len(by_unit), unparsed, backend.stats() if backend else "no replies")


def disagreement_table(steps: list[str], labels: list[str], validation: list[str], csv: str, md: str,
                       self_report: bool, provenance: dict) -> None:
    """results/paper/disagreement.{csv,md} from the rounds' ``debate_steps`` (layer A), the
    backbones' pushback labels and the judge's validation (layer B; empty lists when off)."""
    reports = []
    for path in steps:
        where = layout.parse(path)
        reports += [r | {"backbone": where.backbone, "dataset": where.dataset, "method": where.method}
                    for r in read_table("debate_steps", path).to_dicts() if r["step"] == SELF_REPORT_STEP]
    judged = []
    for path in labels:
        backbone = path.replace("\\", "/").split("/")[-3]  # results/{backbone}/disagreement/pushback.parquet
        judged += [r | {"backbone": backbone} for r in read_table("pushback_labels", path).to_dicts()]
    if validation:
        v = read_table("pushback_validation", validation[0]).to_dicts()[0]
        status, line = ("PASSED" if v["passed"] else "FAILED"), validation_line(v)
        if not v["passed"]:
            line = f"**{line} Its labels are not used: every layer-B column is empty.**"
    else:
        status, line = "off", "Layer B (pushback judge): off (config disagreement.pushback)."
    rows = disagreement_rows(reports, judged, status)
    write_csv(csv, pl.DataFrame(rows).select(COLUMNS) if rows else pl.DataFrame(schema={c: pl.Utf8 for c in COLUMNS}))
    write_text(md, disagreement_markdown(rows, line, self_report))
    log.info("disagreement table: %d cells, layer B %s", len(rows), status)
