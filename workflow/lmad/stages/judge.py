"""Rule ``judge``: LLM judge decision plus official EM/F1 for every method's predictions."""
from __future__ import annotations

import logging

import polars as pl

from ..answers import exact_match, f1_score
from ..backends import ChatRequest, open_backend
from ..prompts import load_prompt
from ..schemas import read_table, write_table

log = logging.getLogger(__name__)

VERDICTS = {"correct": 1.0, "incorrect": 0.0}


def parse_verdict(text: str) -> str:
    """Strict: the reply must be exactly one verdict word (case and surrounding
    whitespace/period aside). Anything else is 'unscored', never right or wrong."""
    word = text.strip().rstrip(".").strip().lower()
    return word if word in VERDICTS else "unscored"


def judge(questions: list[str], predictions: list[str], prompt: str, judgments: list[str], model: dict,
          cache_dir: str, max_tokens: int, provenance: dict) -> None:
    """Every method's predictions on every dataset in one batch. ``predictions`` holds the
    same number of tables per dataset, grouped in the order of ``questions``; ``judgments[i]``
    is the table of dataset i."""
    if len(judgments) != len(questions) or not questions or len(predictions) % len(questions):
        raise ValueError(f"judge: {len(predictions)} predictions tables and {len(judgments)} outputs do not "
                         f"split evenly over {len(questions)} datasets")
    per = len(predictions) // len(questions)
    template = load_prompt(prompt)
    backend = open_backend(model, cache_dir)
    datasets = []
    for u, path in enumerate(questions):
        qs = {q["qid"]: q for q in read_table("questions", path).to_dicts()}
        preds = pl.concat([read_table("predictions", p) for p in predictions[u * per:(u + 1) * per]]).to_dicts()
        datasets.append((qs, preds))
    asked = [(qs, p) for qs, preds in datasets for p in preds if p["prediction"].strip()]
    requests = []
    for qs, p in asked:
        q = qs[p["qid"]]
        gold = q["answer"] + (f" (also accepted: {', '.join(q['aliases'])})" if q["aliases"] else "")
        requests.append(ChatRequest(
            messages=template.render(question=q["question"], gold=gold, prediction=p["prediction"]),
            temperature=0.0, max_tokens=max_tokens, seed=0,
            constraint={"choice": list(VERDICTS)}))
    replies = dict(zip((id(p) for _, p in asked), backend.generate(requests)))
    total = unscored = 0
    for (qs, preds), out in zip(datasets, judgments):
        rows = _judged(qs, preds, replies, backend.model_id)
        write_table("judgments", rows, out, provenance)
        total += len(rows)
        unscored += sum(r["judge_verdict"] == "unscored" for r in rows)
    log.info("judged %d predictions of %d datasets (%d unscored); %s", total, len(questions), unscored,
             backend.stats())


def _judged(qs: dict, preds: list[dict], replies: dict, judge_model: str) -> list[dict]:
    rows = []
    for p in preds:
        q = qs[p["qid"]]
        golds = [q["answer"], *q["aliases"]]
        reply = replies.get(id(p))
        # an empty prediction is wrong without asking the judge
        verdict = parse_verdict(reply.text) if reply else "incorrect"
        rows.append({
            "qid": p["qid"], "dataset": q["dataset"], "method": p["method"], "prediction": p["prediction"],
            "gold": q["answer"], "aliases": q["aliases"], "judge_model": judge_model,
            "judge_verdict": verdict, "judge_correct": VERDICTS.get(verdict),
            "judge_raw": reply.text if reply else "<empty prediction: not sent to the judge>",
            "em": exact_match(p["prediction"], golds), "f1": f1_score(p["prediction"], golds),
            "prompt_tokens": reply.prompt_tokens if reply else 0,
            "completion_tokens": reply.completion_tokens if reply else 0,
            "finish_reason": reply.finish_reason if reply else "skipped",
            "cached": reply.cached if reply else False,
        })
    return rows
