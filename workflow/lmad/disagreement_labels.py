"""The labels of the disagreement layers and their strict parsers: below the protocols (the debate
engine asks layer A in its rounds), shared by the engine, the judge stages, the tables and the
viewer; the rest of the layers is ``lmad.studies.disagreement``.

Layer A (self-report): after each debate turn the debater, in the same conversation (its
turn's prompt, tone instruction included, and its own reply), is asked for
``{"agreement": "full" | "partial" | "none", "changed_mind": "yes" | "no"}``, constrained to
that JSON schema. Layer B (blind pushback judge): a judge that reads only the parent turn and
the reply returns ``{"stance": "agree" | "partial" | "disagree", "move": "challenge" |
"adds_evidence" | "concedes" | "refines" | "restates"}`` (the layered-disagreement paper scores
stance and move type separately).

Parsing is strict (one JSON document, exactly the keys, values from the lists), through
``lmad.model_json``; a parser never raises. A reply that fails is recorded with its reason
and counts as *unlabelled*: it is excluded from every share and counted beside it (the
layered-disagreement paper: layer A analyses use only explicitly labelled turns).
"""
from __future__ import annotations

import json

from .backends import ChatRequest
from .model_json import load_model_json
from .prompts import Prompt

AGREEMENT = ("full", "partial", "none")
CHANGED = ("yes", "no")
STANCE = ("agree", "partial", "disagree")
MOVES = ("challenge", "adds_evidence", "concedes", "refines", "restates")

#: A's agreement label and B's stance on one scale (for the A-B agreement).
STANCE_OF_AGREEMENT = {"full": "agree", "partial": "partial", "none": "disagree"}

#: The engine's ``debate_steps.step`` name of a self-report (a measurement, not a method call:
#: never counted in a method's cost).
SELF_REPORT_STEP = "self_report"
#: layer C's re-asks of a toned turn's label: tone instruction deleted / kept (the noise floor)
PERSIST_REMOVED, PERSIST_KEPT = "persist_removed", "persist_kept"
MEASUREMENT_STEPS = (SELF_REPORT_STEP, PERSIST_REMOVED, PERSIST_KEPT)
#: generated tokens of one self-report (the longest valid reply is about 20 tokens)
SELF_REPORT_MAX_TOKENS = 48

SELF_REPORT_SCHEMA = {
    "type": "object",
    "properties": {"agreement": {"enum": list(AGREEMENT)}, "changed_mind": {"enum": list(CHANGED)}},
    "required": ["agreement", "changed_mind"],
    "additionalProperties": False,
}
PUSHBACK_SCHEMA = {
    "type": "object",
    "properties": {"stance": {"enum": list(STANCE)}, "move": {"enum": list(MOVES)}},
    "required": ["stance", "move"],
    "additionalProperties": False,
}


def _parse(text, allowed: dict[str, tuple[str, ...]]) -> tuple[dict | None, str]:
    obj, error = load_model_json(text)
    if error:
        return None, f"invalid JSON: {error}"
    if not isinstance(obj, dict) or set(obj) != set(allowed):
        got = sorted(obj) if isinstance(obj, dict) else type(obj).__name__
        return None, f"expected an object with exactly the keys {sorted(allowed)}, got {got}"
    for key, values in allowed.items():
        if obj[key] not in values:
            return None, f"{key!r} must be one of {list(values)}, got {obj[key]!r}"[:300]
    return {k: obj[k] for k in allowed}, ""


def parse_self_report(text) -> tuple[dict | None, str]:
    """``({"agreement", "changed_mind"}, "")`` or ``(None, reason)``; never raises."""
    return _parse(text, {"agreement": AGREEMENT, "changed_mind": CHANGED})


def parse_pushback(text) -> tuple[dict | None, str]:
    """``({"stance", "move"}, "")`` or ``(None, reason)``; never raises."""
    return _parse(text, {"stance": STANCE, "move": MOVES})


def as_json(label: dict | None) -> str:
    return json.dumps(label, sort_keys=True) if label else ""


def self_report_request(turn: ChatRequest, reply: str, prompt: Prompt, seed: int) -> ChatRequest:
    """Layer A's call: the turn's own conversation (its prompt, tone included, and the debater's
    reply) followed by the self-report question, at the turn's temperature, JSON-constrained."""
    return ChatRequest(messages=(*turn.messages, ("assistant", reply), *prompt.render()),
                       temperature=float(turn.temperature), max_tokens=SELF_REPORT_MAX_TOKENS, seed=seed,
                       constraint={"json": SELF_REPORT_SCHEMA}, role="self_report")
