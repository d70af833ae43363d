"""Responders of the scripted backend for the opinion-table tests (config ``responder:
"opinion_oracle:respond"`` or ``"opinion_oracle:unparsable"``). ``respond``: an agent's first answer
is fixed by its temperature (0.1 and 0.9: A, 0.5: B, CoT's 0: B), and every debate revision (a prompt
that shows the other agents' responses) answers C, so a method's final round differs from its round 0."""
from __future__ import annotations

from lmad.backends.scripted import ScriptedBackend

_default = ScriptedBackend()._default
FIRST = {0.1: "A", 0.5: "B", 0.9: "A"}


def respond(req) -> str:
    if req.constraint:  # the judge and structured roles: the backend's own replies
        return _default(req)
    prompt = "\n".join(c for _, c in req.messages)
    letter = "C" if "other agents' previous responses" in prompt else FIRST.get(round(req.temperature, 1), "B")
    return f"Thinking it over.\nAnswer: {letter}"


def unparsable(req) -> str:
    if req.constraint:
        return _default(req)
    return "I would rather not say."
