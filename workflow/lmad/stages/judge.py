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


def judge(questions: str, predictions: list[str], prompt: str, judgments: str, model: dict,
          cache_dir: str, max_tokens: int, provenance: dict) -> None:
    qs = {q["qid"]: q for q in read_table("questions", questions).to_dicts()}
    preds = pl.concat([read_table("predictions", p) for p in predictions]).to_dicts()
    template = load_prompt(prompt)
    backend = open_backend(model, cache_dir)
    asked = [p for p in preds if p["prediction"].strip()]
    requests = []
    for p in asked:
        q = qs[p["qid"]]
        gold = q["answer"] + (f" (also accepted: {', '.join(q['aliases'])})" if q["aliases"] else "")
        requests.append(ChatRequest(
            messages=template.render(question=q["question"], gold=gold, prediction=p["prediction"]),
            temperature=0.0, max_tokens=max_tokens, seed=0,
            constraint={"choice": list(VERDICTS)}))
    replies = dict(zip((id(p) for p in asked), backend.generate(requests)))
    rows = []
    for p in preds:
        q = qs[p["qid"]]
        golds = [q["answer"], *q["aliases"]]
        reply = replies.get(id(p))
        # an empty prediction is wrong without asking the judge
        verdict = parse_verdict(reply.text) if reply else "incorrect"
        rows.append({
            "qid": p["qid"], "dataset": q["dataset"], "method": p["method"], "prediction": p["prediction"],
            "gold": q["answer"], "aliases": q["aliases"], "judge_model": backend.model_id,
            "judge_verdict": verdict, "judge_correct": VERDICTS.get(verdict),
            "judge_raw": reply.text if reply else "<empty prediction: not sent to the judge>",
            "em": exact_match(p["prediction"], golds), "f1": f1_score(p["prediction"], golds),
            "prompt_tokens": reply.prompt_tokens if reply else 0,
            "completion_tokens": reply.completion_tokens if reply else 0,
            "finish_reason": reply.finish_reason if reply else "skipped",
            "cached": reply.cached if reply else False,
        })
    write_table("judgments", rows, judgments, provenance)
    unscored = sum(r["judge_verdict"] == "unscored" for r in rows)
    log.info("judged %d predictions (%d unscored); %s", len(rows), unscored, backend.stats())
