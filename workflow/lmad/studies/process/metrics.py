"""The process metrics (docs/studies.md "Process metrics"): RP / EI / NC rubric scores of every
debate reply by the configured judge, and CPL / AME / CMP of every debating method, LMAD included.

**Rubric.** Per reply, the judge returns ``{"rp": n, "ei": n, "nc": n}`` with n an integer
1-10, constrained to that JSON schema (an enum of the ten integers, which every backend's
grammar supports). The TrueMAD summary names the dimensions (Rebuttal Precision, Evidence
Independence, Novel Contribution) and the rubric's intent (reward specific error analysis,
evidence-based independence from consensus and relevant new reasoning; penalize generic
replies, imitation, repetition and paraphrase) but not its text: ``config/prompts/process_rubric.txt``
is this project's wording. The judge sees the question, the responses the reply answered
(the parent of layer B, ``lmad.studies.disagreement.pushback``), the replier's own previous response
and the reply. Strict parsing: exactly the three keys, integers (not booleans) in 1..10;
anything else is *unscored*, recorded with its reason, and left out of the means.

**Transitions.** CPL, AME and CMP are ``lmad.paper.dynamics``' definitions (EM against answer
+ aliases). For a debate method the states are its rounds; for an LMAD method they are its
iterations' generations (``iter{k}/generate.parquet``; a question that stopped keeps its last
answers). CMP is named after the agent count K: CMP1v(K-1), "exactly one of K agents right at
the start" (TrueMAD's CMP1v3 is K = 4).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

from lmad.backends import ChatRequest
from lmad.model_json import load_model_json
from lmad.prompts import Prompt
from lmad.stats import mean_interval

DIMENSIONS = ("rp", "ei", "nc")
SCORES = tuple(range(1, 11))
RUBRIC_SCHEMA = {
    "type": "object",
    "properties": {d: {"enum": list(SCORES)} for d in DIMENSIONS},
    "required": list(DIMENSIONS),
    "additionalProperties": False,
}


def rubric_request(prompt: Prompt, question: str, parent: str, own: str, reply: str, max_tokens: int) -> ChatRequest:
    return ChatRequest(messages=prompt.render(question=question, parent=parent, own=own.strip() or "(none)",
                                              reply=reply.strip()),
                       temperature=0.0, max_tokens=max_tokens, seed=0, constraint={"json": RUBRIC_SCHEMA}, role="rubric")


def parse_rubric(text) -> tuple[dict | None, str]:
    """``({"rp", "ei", "nc"}, "")`` or ``(None, reason)``; never raises."""
    obj, error = load_model_json(text)
    if error:
        return None, f"invalid JSON: {error}"
    if not isinstance(obj, dict) or set(obj) != set(DIMENSIONS):
        got = sorted(obj) if isinstance(obj, dict) else type(obj).__name__
        return None, f"expected an object with exactly the keys {list(DIMENSIONS)}, got {got}"
    for d in DIMENSIONS:
        v = obj[d]
        if isinstance(v, bool) or not isinstance(v, int) or v not in SCORES:
            return None, f"{d!r} must be an integer 1-10, got {v!r}"[:200]
    return {d: obj[d] for d in DIMENSIONS}, ""


def mean_ci(values: Sequence[float]) -> tuple[float, float, float]:
    """Mean and normal-approximation 95 % interval, clipped to the 1-10 scale (the point itself
    when n = 1 or every score is equal); NaN for no value."""
    m, lo, hi = mean_interval(values)
    if len(values) == 1:
        return m, m, m
    return m, max(1.0, lo), min(10.0, hi)


def cmp_name(k: int) -> str:
    return f"CMP1v{k - 1}"


def rubric_summary(rows: Sequence[Mapping]) -> dict:
    """Scored / unscored counts and mean [95 % CI] of each dimension over one cell's rows."""
    scored = [r for r in rows if r["rp"] is not None]
    out = {"replies": len(rows), "scored": len(scored), "unscored": len(rows) - len(scored)}
    for d in DIMENSIONS:
        out[d], out[f"{d}_lo"], out[f"{d}_hi"] = mean_ci([float(r[d]) for r in scored])
    return out


# ------------------------------------------------------------------ the rubric's known-answer battery
#
# Validation before use, like layer B's (lmad.studies.disagreement.pushback): per chosen question, one reply
# authored to score HIGH and one to score LOW on each dimension, under a parent that states a rival
# answer and an own previous response that states the gold. The judge passes only if, on every
# dimension, its recall on the high items (score >= HIGH_MIN) and on the low items (score < HIGH_MIN)
# each reach the floor: a judge that gives every reply the same score fails one side.

#: a score at or above this reads "high", below it "low" (the middle of the 1-10 scale)
HIGH_MIN = 6
PARENT = "Reading the passages, the answer is {rival}.\nAnswer: {rival}"
OWN = "Reading the passages, the answer is {gold}.\nAnswer: {gold}"
#: (dimension, kind) -> the authored reply; {evidence} quotes a passage sentence
REPLIES = {
    ("rp", "high"): "The earlier response concludes {rival}, and that step is wrong: nothing in the passages links "
                    "{rival} to the question, while the passage on {title} says: \"{evidence}\" That points to "
                    "{gold}, not {rival}.\nAnswer: {gold}",
    ("rp", "low"): "Interesting points all around. There may be something to it, or maybe not.\nAnswer: {gold}",
    ("ei", "high"): "I keep my answer because of the evidence, not the vote: the passage on {title} says: "
                    "\"{evidence}\" Nothing in the passages supports {rival}.\nAnswer: {gold}",
    ("ei", "low"): "The other response says {rival}. Since the others went that way, I will follow the majority "
                   "and switch without checking the passages.\nAnswer: {rival}",
    ("nc", "high"): "A point nobody has raised yet: the passage on {title} says: \"{evidence}\" Read together with "
                    "the question's other condition, this narrows the answer down to {gold}.\nAnswer: {gold}",
    ("nc", "low"): OWN,  # its own previous response, repeated word for word
}


@dataclass(frozen=True)
class RubricItem:
    dataset: str
    qid: str
    dimension: str  # rp | ei | nc
    kind: str  # high | low
    question: str
    parent: str
    own: str
    reply: str


def _evidence(q: dict) -> tuple[str, str]:
    """(title, sentence) quoted by the high replies: a supporting fact when the question has
    one, else the first sentence of its first paragraph."""
    context = [c for c in q["context"] or [] if c["sentences"]]
    for f in q.get("supporting_facts") or []:
        for c in context:
            if c["title"] == f["title"] and 0 <= f["sent_id"] < len(c["sentences"]):
                return c["title"], c["sentences"][f["sent_id"]].strip()
    return (context[0]["title"], context[0]["sentences"][0].strip()) if context else ("", "")


def build_rubric_battery(questions: Iterable[dict], questions_per_dataset: int, seed: int) -> list[RubricItem]:
    """Seeded: at most ``questions_per_dataset`` questions of each dataset with a rival answer
    (lmad.judge_battery.rival_answer; none without a known answer: an opinion, an empty gold) and a
    passage to quote, six items each."""
    from lmad.judge_battery import known_answer, per_dataset_sample, rival_answer, rival_pool

    questions = sorted(questions, key=lambda q: (q["dataset"], q["qid"]))
    pool = rival_pool(questions)
    items = []
    for _, rng, chosen in per_dataset_sample(questions, questions_per_dataset, seed, "rubric\0"):
        for q in chosen:
            rival, (title, evidence) = rival_answer(q, pool, rng), _evidence(q)
            if rival is None or not evidence:
                continue
            fill = {"gold": known_answer(q), "rival": rival, "title": title, "evidence": evidence}
            items += [RubricItem(q["dataset"], q["qid"], d, kind, q["question"], PARENT.format(**fill),
                                 OWN.format(**fill), text.format(**fill)) for (d, kind), text in REPLIES.items()]
    return items


def validate_rubric(rows: Sequence[Mapping], min_recall: float) -> dict:
    """Two-sided floor per dimension over judged battery rows (``dimension``, ``kind``, and the
    scores, None when the reply did not parse: a miss on either side)."""
    out: dict = {"n_items": len(rows), "n_unparsed": sum(r["rp"] is None for r in rows),
                 "min_recall": float(min_recall)}
    low = []
    for d in DIMENSIONS:
        for kind in ("high", "low"):
            mine = [r for r in rows if r["dimension"] == d and r["kind"] == kind]
            hits = sum(r[d] is not None and (r[d] >= HIGH_MIN) == (kind == "high") for r in mine)
            out[f"{d}_{kind}"] = hits / len(mine) if mine else math.nan
            if not out[f"{d}_{kind}"] >= min_recall:
                low.append(f"{d.upper()} {kind} {100 * out[f'{d}_{kind}']:.1f} %" if mine else f"no {d.upper()} {kind} item")
    out["passed"] = bool(rows) and not low
    if not rows:
        out["reason"] = "the battery is empty (no question with a rival answer and a passage to quote)"
    elif out["n_unparsed"] == len(rows):
        out["reason"] = "every battery reply was unscored: the judge never answered in the allowed form"
    elif low:
        out["reason"] = f"recall under {100 * min_recall:.0f} %: " + ", ".join(low)
    else:
        out["reason"] = f"recall on high and on low items of RP, EI and NC all reach {100 * min_recall:.0f} %"
    return out


def rubric_validation_line(v: Mapping) -> str:
    def pct(x):
        return f"{100 * x:.0f} %" if x is not None and math.isfinite(x) else "–"

    recalls = "; ".join(f"{d.upper()} high {pct(v[f'{d}_high'])} / low {pct(v[f'{d}_low'])}" for d in DIMENSIONS)
    return (f"Rubric judge `{v['judge_model']}` validation {'PASSED' if v['passed'] else 'FAILED'} on {v['n_items']} "
            f"authored replies (recall {recalls}; high = score ≥ {HIGH_MIN}, floor {100 * v['min_recall']:.0f} % "
            f"each), {v['n_unparsed']} unparsable — {v['reason']}.")
