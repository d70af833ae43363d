"""Responder of the scripted backend for the unanimity workflow test (config
``responder: "unanimous_oracle:respond"``): every agent, every round, and every judge, moderator or
chair names the same answer: option A on a choice question, -3 on a number, x-1 on an expression."""
from __future__ import annotations

import json

from lmad.backends.scripted import ScriptedBackend

_default = ScriptedBackend()._default


def answer_of(prompt: str) -> str:
    if "<letter>" in prompt:
        return "A"
    return "x-1" if "<final answer>" in prompt or "LaTeX" in prompt else "-3"


def respond(req) -> str:
    prompt = "\n".join(c for _, c in req.messages)
    said = answer_of(prompt)
    schema = ((req.constraint or {}).get("json") or {}).get("properties", {})
    if "decided" in schema:
        return json.dumps({"decided": True, "answer": said})
    if set(schema) == {"answer"}:
        return json.dumps({"answer": said})
    if req.constraint:
        return _default(req)
    return f"Working it out step by step.\nAnswer: {said}"
