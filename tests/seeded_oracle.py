"""Responder of the scripted backend for the replicate tests (config
``responder: "seeded_oracle:respond"``): a multiple-choice answer drawn from the call's seed, so
replicates (which change only call seeds) give different answers and a non-zero spread."""
from __future__ import annotations

import hashlib

from lmad.backends.scripted import ScriptedBackend

_default = ScriptedBackend()._default


def respond(req) -> str:
    if req.constraint:  # the judge and structured roles: the backend's own replies
        return _default(req)
    pick = hashlib.sha256(f"{req.seed}\0{req.temperature}".encode()).digest()[0] % 4
    return f"Thinking it over.\nAnswer: {'ABCD'[pick]}"
