"""Rules ``judge`` and ``judge_validation``: LLM judge decisions plus official EM/F1, and the
judge's known-answer validation (``lmad.judge_battery``) with exactly the same requests.

:func:`validate_judge` is every judge's validation on its known-answer battery: the answer judge
here, layer B's pushback judge (``stages.disagreement.pushback_validation``) and the rubric judge
(``stages.process.rubric_validation``) each say only what differs (:class:`KnownAnswerBattery`)."""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Callable

import polars as pl

from .. import layout
from ..atomic import write_text
from ..answers import get, gold_of, type_of
from ..backends import ChatRequest, Completion, open_backend
from ..call_accounting import call_columns
from ..headline import validation_line
from ..judge_battery import build_battery, summarize
from ..prompts import Prompt, load_prompt
from ..schemas import read_table, write_table

log = logging.getLogger(__name__)

VERDICTS = {"correct": 1.0, "incorrect": 0.0}
# one list for every judge call: the call key memoizes a constraint's JSON by identity (lmad.backends.base)
_VERDICT_CHOICES = list(VERDICTS)

#: the verdict of a prediction scored by its answer type's own rule (numbers, expressions,
#: letters): no judge call, ``judge_correct`` null, ``correct`` the rule's decision
RULE = "rule"


def rule_scored(question: dict) -> bool:
    """Whether a question's answers are scored by a rule rather than an LLM judge: every answer
    type but spans and yes/no, whose judge decides what a free-form answer means."""
    return not get(type_of(question)).free_form


def parse_verdict(text: str) -> str:
    """Strict: the reply must be exactly one verdict word (case and surrounding
    whitespace/period aside). Anything else is 'unscored', never right or wrong."""
    word = text.strip().rstrip(".").strip().lower()
    return word if word in VERDICTS else "unscored"


def judge_request(template: Prompt, question: dict, prediction: str, max_tokens: int) -> ChatRequest:
    """The one judge call: real predictions and battery items alike (so the battery
    measures the judge exactly as the run uses it)."""
    gold = question["answer"] + (f" (also accepted: {', '.join(question['aliases'])})" if question["aliases"] else "")
    return ChatRequest(messages=template.render(question=question["question"], gold=gold, prediction=prediction),
                       temperature=0.0, max_tokens=max_tokens, seed=0, constraint={"choice": _VERDICT_CHOICES},
                       role="judge")


def judge(questions: list[str], predictions: list[str], prompt: str, judgments: list[str], model: dict,
          cache_dir: str, max_tokens: int, provenance: dict) -> None:
    """Every method's predictions on every dataset in one batch. ``judgments[i]`` is the table
    of the dataset of ``questions[i]``; each predictions table goes to the dataset its path
    names (``lmad.layout``), in the order given."""
    names = [layout.parse(q).dataset for q in questions]
    if len(judgments) != len(questions) or not questions or [layout.parse(j).dataset for j in judgments] != names:
        raise ValueError(f"judge: judgments {judgments} do not pair with the datasets of {questions}")
    by_dataset: dict[str, list[str]] = {d: [] for d in names}
    for p in predictions:
        d = layout.parse(p).dataset
        if d not in by_dataset:
            raise ValueError(f"judge: predictions {p} of dataset {d!r}, which has no questions table here")
        by_dataset[d].append(p)
    template = load_prompt(prompt)
    backend = open_backend(model, cache_dir)
    datasets = []
    for d, path in zip(names, questions):
        qs = {q["qid"]: q for q in read_table("questions", path).to_dicts()}
        tables = [read_table("predictions", p) for p in by_dataset[d]]
        preds = pl.concat(tables).to_dicts() if tables else []
        datasets.append((qs, preds))
    asked = [(qs, p) for qs, preds in datasets for p in preds
             if p["prediction"].strip() and not rule_scored(qs[p["qid"]])]
    requests = [judge_request(template, qs[p["qid"]], p["prediction"], max_tokens) for qs, p in asked]
    replies = dict(zip((id(p) for _, p in asked), backend.generate(requests)))
    total = unscored = 0
    for (qs, preds), out in zip(datasets, judgments):
        rows = _judged(qs, preds, replies, backend.model_id)
        write_table("judgments", rows, out, provenance)
        total += len(rows)
        unscored += sum(r["judge_verdict"] == "unscored" for r in rows)
    log.info("judged %d predictions of %d datasets (%d unscored); %s", total, len(questions), unscored,
             backend.stats())


@dataclass(frozen=True)
class KnownAnswerBattery:
    """What one judge's validation has of its own; :func:`validate_judge` does the rest alike."""

    title: str                                        # the report's heading
    tables: tuple[str, str]                           # (items, verdict) tables of lmad.schemas
    build: Callable[[list[dict]], list]               # the run's questions -> the battery's items
    request: Callable[[Prompt, Any], ChatRequest]     # an item's request: exactly the run's
    row: Callable[[int, Any, Completion], dict]       # (index, item, reply) -> its row (judge and cost aside)
    validate: Callable[[list[dict], float], dict]     # (rows, min_recall) -> the verdict
    line: Callable[[dict], str]                       # the verdict in one line (the report, the log)
    table: Callable[[list[dict], dict], list[str]]    # (rows, verdict) -> the report's table lines
    #: (items, the run's questions) -> the report's lines on what the battery stands on (e.g. a
    #: dataset without gold), before its table
    note: Callable[[list, list[dict]], list[str]] = lambda items, questions: []


def validate_judge(battery: KnownAnswerBattery, questions: list[str], prompt: str, model: dict, judge_name: str,
                   cache_dir: str, min_recall: float, items_path: str, validation: str, report: str,
                   provenance: dict) -> None:
    """Judge the battery built from the run's questions in one batch (no backend opened, and no
    model loaded, for an empty battery); write every judged item, the verdict and its report."""
    qs = [q for path in questions for q in read_table("questions", path).to_dicts()]
    items = battery.build(qs)
    template = load_prompt(prompt)
    backend = open_backend(model, cache_dir) if items else None
    replies = backend.generate([battery.request(template, it) for it in items]) if backend else []
    rows = [{**battery.row(i, it, reply), "judge_model": judge_name, **call_columns(reply)}
            for i, (it, reply) in enumerate(zip(items, replies))]
    items_table, verdict_table = battery.tables
    write_table(items_table, rows, items_path, provenance)
    summary = {"judge_model": judge_name, **battery.validate(rows, min_recall)}
    write_table(verdict_table, [summary], validation, provenance)
    lines = [f"# {battery.title} — `{judge_name}`\n", battery.line(summary) + "\n", *battery.note(items, qs),
             *battery.table(rows, summary)]
    write_text(report, "\n".join(lines) + "\n")
    log.info("%s; %s", battery.line(summary), backend.stats() if backend else "no items")


def _judged(qs: dict, preds: list[dict], replies: dict, judge_model: str) -> list[dict]:
    rows, golds = [], {}  # a question's Gold once, not once per method that answered it
    for p in preds:
        q = qs[p["qid"]]
        gold = golds.get(p["qid"])
        if gold is None:
            gold = golds[p["qid"]] = gold_of(q)
        reply = replies.get(id(p))
        em, f1 = get(gold.answer_type).score(p["prediction"], gold.answers, gold.rules)
        if rule_scored(q):  # EM and F1 are the rule's accuracy; opinion questions have no gold
            correct = None if em is None else em > 0
            verdict, raw = RULE, f"<scored by the {q['answer_type']} rule: not sent to the judge>"
        else:
            correct = em > 0
            # an empty prediction is wrong without asking the judge
            verdict = parse_verdict(reply.text) if reply else "incorrect"
            raw = reply.text if reply else "<empty prediction: not sent to the judge>"
        rows.append({
            "qid": p["qid"], "dataset": q["dataset"], "method": p["method"], "prediction": p["prediction"],
            "gold": q["answer"], "aliases": q["aliases"], "judge_model": judge_model,
            "judge_verdict": verdict, "judge_correct": VERDICTS.get(verdict), "judge_raw": raw,
            "correct": correct, "em": em, "f1": f1, **call_columns(reply),
        })
    return rows


def judge_validation(questions: list[str], prompt: str, battery: str, validation: str, report: str, model: dict,
                     judge_name: str, cache_dir: str, max_tokens: int, questions_per_dataset: int,
                     kinds: list[str], max_aliases: int, min_recall: float, seed: int, provenance: dict) -> None:
    """Judge a seeded known-answer battery built from the run's questions, in one batch, with
    the run's judge prompt, model and decoding; write every item and the pass/fail summary."""

    def build(questions: list[dict]) -> list[tuple]:
        # the battery checks the judge where the run uses it: span and yes/no questions
        qs = [q for q in questions if not rule_scored(q)]
        by_id = {(q["dataset"], q["qid"]): q for q in qs}
        return [(it, by_id[(it.dataset, it.qid)]) for it in build_battery(qs, questions_per_dataset, kinds,
                                                                          max_aliases, seed)]

    def row(i: int, item: tuple, reply) -> dict:
        it, question = item
        return {"dataset": it.dataset, "qid": it.qid, "item": i, "kind": it.kind, "expected": it.expected,
                "candidate": it.candidate, "gold": question["answer"], "judge_verdict": parse_verdict(reply.text),
                "judge_raw": reply.text}

    validate_judge(KnownAnswerBattery(
        title="Judge validation", tables=("judge_battery", "judge_validation"), build=build,
        request=lambda template, item: judge_request(template, item[1], item[0].candidate, max_tokens), row=row,
        validate=summarize, line=validation_line, table=_by_kind),
        questions, prompt, model, judge_name, cache_dir, min_recall, battery, validation, report, provenance)


def _by_kind(rows: list[dict], summary: dict) -> list[str]:
    """The judge's verdicts per kind of battery item."""
    by_kind = (pl.DataFrame(rows).group_by("kind", "expected").agg(
        pl.len().alias("n"), (pl.col("judge_verdict") == "correct").sum().alias("said_correct"),
        (pl.col("judge_verdict") == "unscored").sum().alias("unscored")).sort("expected", "kind", descending=[True, False])
        if rows else pl.DataFrame())
    lines = ["| Kind | Should be | Items | Judged correct | Unscored |", "|---|---|---|---|---|"]
    lines += [f"| {r['kind']} | {'correct' if r['expected'] else 'incorrect'} | {r['n']} | {r['said_correct']} | "
              f"{r['unscored']} |" for r in by_kind.to_dicts()]
    return lines
