"""Responder of the scripted backend for the task-family workflow tests (config
``responder: "typed_oracle:respond"``): every agent gives the SAME answer in a different surface
form, chosen by its temperature, so agreement, votes and early stops must compare answers by
their type's equivalence. A number question gets 1/2 as ``0.5``, ``1/2`` or ``\\frac{1}{2}``; a
choice question B as ``(B)``, ``B)`` or ``answer: b``."""
from __future__ import annotations

from lmad.backends.scripted import ScriptedBackend

_default = ScriptedBackend()._default
FORMS = {"number": ["Answer: 0.5", "So the answer is 1/2.", "Answer: $\\frac{1}{2}$"],
         "letter": ["Answer: (B)", "I pick B) as the answer.\nAnswer: B)", "the answer is b"]}


def respond(req) -> str:
    prompt = "\n".join(c for _, c in req.messages)
    choices = (req.constraint or {}).get("choice") or []
    if "correct" in choices:
        return "incorrect"
    if req.constraint:
        return _default(req)
    kind = "letter" if "<letter>" in prompt else "number"
    which = {0.1: 0, 0.5: 1, 0.9: 2}.get(round(req.temperature, 1), 0)
    return f"Working it out step by step.\n{FORMS[kind][which]}"
