"""Responders of the scripted backend for the committee tests (config ``responder:
"committee_oracle:respond_a"``; the jobs need tests/ on PYTHONPATH): each model answers with its
own word (``alpha``, ``beta``, ``gamma``), so a table shows which model spoke; structured calls get
the test double's default. With ``COMMITTEE_CALL_LOG`` set, every call a model receives (a cache
miss) appends ``<model>\\t<role>`` there, the role read from the prompt's system message."""
from __future__ import annotations

import os

from lmad.backends.scripted import ScriptedBackend

WORDS = {"a": "alpha", "b": "beta", "c": "gamma"}
_default = ScriptedBackend()._default
#: a system message's opening words -> the role whose calls they start
ROLES = {"You rewrite a worked solution": "extractor", "You compare several agents": "localizer",
         "You settle a disputed": "resolver", "You check whether proposed claims": "relation_check",
         "You are the judge of a debate": "debate_judge", "You are the moderator": "debate_judge",
         "You chair a committee": "chair"}


def role_of(req) -> str:
    system = next((text for who, text in req.messages if who == "system"), "")
    return next((role for start, role in ROLES.items() if system.startswith(start)), "agent")


def _respond(model: str, req) -> str:
    log = os.environ.get("COMMITTEE_CALL_LOG")
    if log:
        with open(log, "a") as fh:
            fh.write(f"{model}\t{role_of(req)}\n")
    if req.constraint:
        return _default(req)
    return f"Model {model} reasons briefly.\nAnswer: {WORDS[model]}"


def respond_a(req) -> str:
    return _respond("a", req)


def respond_b(req) -> str:
    return _respond("b", req)


def respond_c(req) -> str:
    return _respond("c", req)
