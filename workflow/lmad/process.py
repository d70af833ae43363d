"""Seed 001's process metrics (README "Process metrics"): RP / EI / NC rubric scores of every
debate reply by the configured judge, and CPL / AME / CMP of every debating method, LMAD included.

**Rubric.** Per reply, the judge returns ``{"rp": n, "ei": n, "nc": n}`` with n an integer
1-10, constrained to that JSON schema (an enum of the ten integers, which every backend's
grammar supports). The TrueMAD summary names the dimensions (Rebuttal Precision, Evidence
Independence, Novel Contribution) and the rubric's intent (reward specific error analysis,
evidence-based independence from consensus and relevant new reasoning; penalize generic
replies, imitation, repetition and paraphrase) but not its text: ``config/prompts/process_rubric.txt``
is this project's wording. The judge sees the question, the responses the reply answered
(the parent of layer B, ``lmad.disagreement.pushback``), the replier's own previous response
and the reply. Strict parsing: exactly the three keys, integers (not booleans) in 1..10;
anything else is *unscored*, recorded with its reason, and left out of the means.

**Transitions.** CPL, AME and CMP are ``lmad.paper.dynamics``' definitions (EM against answer
+ aliases). For a debate method the states are its rounds; for an LMAD method they are its
iterations' generations (``iter{k}/generate.parquet``; a question that stopped keeps its last
answers). CMP is named after the agent count K: CMP1v(K-1), "exactly one of K agents right at
the start" (TrueMAD's CMP1v3 is K = 4).
"""
from __future__ import annotations

from typing import Mapping, Sequence

from .backends import ChatRequest
from .model_json import load_model_json
from .prompts import Prompt
from .stats import mean_interval

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
                       temperature=0.0, max_tokens=max_tokens, seed=0, constraint={"json": RUBRIC_SCHEMA})


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
