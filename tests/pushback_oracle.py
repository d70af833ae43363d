"""Responder of the scripted backend for the disagreement workflow test (config
``responder: "pushback_oracle:respond"``; the jobs need tests/ on PYTHONPATH): the pushback
judge reads the reply's opening words as a careful judge would (so the authored battery
passes), every debate self-report says "none" agreement; all other calls get the test
double's default answer."""
from __future__ import annotations

import json

from lmad.backends.scripted import ScriptedBackend

_default = ScriptedBackend()._default
OPEN_DISAGREE = ("I disagree", "That is wrong")
OPEN_AGREE = ("I agree", "You are right")


def respond(req) -> str:
    schema = ((req.constraint or {}).get("json") or {}).get("properties", {})
    if "stance" in schema:
        reply = req.messages[-1][1].split("Reply:\n", 1)[-1]
        if reply.startswith(OPEN_DISAGREE):
            return json.dumps({"stance": "disagree", "move": "challenge"})
        if reply.startswith(OPEN_AGREE):
            return json.dumps({"stance": "agree", "move": "concedes"})
        return json.dumps({"stance": "disagree", "move": "restates"})
    if "agreement" in schema:
        return json.dumps({"agreement": "none", "changed_mind": "no"})
    return _default(req)
