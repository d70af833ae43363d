"""Responder of the scripted backend that logs every call it receives (a store miss) by its
store key, then answers like ``oracle.respond`` (config ``responder: "keylog:respond"``; the
jobs need tests/ on PYTHONPATH). ``KEYLOG_PATH`` is the log, ``KEYLOG_MODEL`` the model identity
of the store key (``backend_identity`` of the model's config entry)."""
from __future__ import annotations

import os

import oracle


def respond(req) -> str:
    with open(os.environ["KEYLOG_PATH"], "a") as fh:
        fh.write(req.key(os.environ["KEYLOG_MODEL"]) + "\n")
    return oracle.respond(req)
