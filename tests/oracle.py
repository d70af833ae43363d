"""Responder of the scripted backend for workflow tests that need set answers
(config ``models.<name>.responder: "oracle:respond"``; the jobs need tests/ on PYTHONPATH).

Every solver or debate turn at temperature 0 (CoT) answers ``RIGHT``, at any other temperature
``WRONG``; the judge says "correct" exactly when the prediction is ``RIGHT``. So CoT scores
100 % and every method built on the persona-temperature samples (SC, debate, LMAD) 0 %.
Structured calls (LMAD, debate judges) get the test double's default answer. With
``ORACLE_CALL_LOG`` set, every call this model receives (a cache miss) appends one line there.
"""
from __future__ import annotations

import os

from lmad.backends.scripted import ScriptedBackend

RIGHT, WRONG = "Zanzibar Oracle", "Atlantis Decoy"
_default = ScriptedBackend()._default


def respond(req) -> str:
    log = os.environ.get("ORACLE_CALL_LOG")
    if log:
        with open(log, "a") as fh:
            fh.write(f"{req.temperature}\n")
    choices = (req.constraint or {}).get("choice") or []
    if "correct" in choices:  # the judge: its prompt holds the prediction (never a gold answer)
        return "correct" if RIGHT in "\n".join(c for _, c in req.messages) else "incorrect"
    if req.constraint:
        return _default(req)
    return f"The passages settle it.\nAnswer: {RIGHT if req.temperature == 0 else WRONG}"
