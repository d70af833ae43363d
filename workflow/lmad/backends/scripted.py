"""Deterministic test double. For tests only: a user config that names it is rejected.

With a ``responder`` callable (unit tests), every request is answered by it. Without
one, it plays a plausible solver: the answer is the title of one of the numbered
passages, chosen from a hash of the prompt, seed and temperature, so agents at
different temperatures sometimes disagree. Constrained requests get a value that
satisfies the constraint.
"""
from __future__ import annotations

import hashlib
import re
from typing import Callable, Sequence

from .base import Backend, ChatRequest, Completion
from .model_files import template_identity

Responder = Callable[[ChatRequest], str]


def _digest(*parts) -> int:
    return int(hashlib.sha256("\x00".join(map(str, parts)).encode()).hexdigest()[:12], 16)


def instance_of(schema: dict, pick: int) -> object:
    """A small JSON value valid under a (simple) JSON schema."""
    if "enum" in schema:
        return schema["enum"][pick % len(schema["enum"])]
    kind = schema.get("type")
    if kind == "object":
        return {k: instance_of(v, pick + i) for i, (k, v) in enumerate(schema.get("properties", {}).items())}
    if kind == "array":
        n = max(schema.get("minItems", 1), 1)
        return [instance_of(schema.get("items", {"type": "string"}), pick + i) for i in range(n)]
    if kind == "integer":
        return int(schema.get("minimum", 1))
    if kind == "boolean":
        return True
    return f"claim {pick % 7}"


class ScriptedBackend(Backend):
    def __init__(self, name: str = "scripted", responder: Responder | None = None,
                 chat_template_kwargs: dict | None = None, **_):
        self.model_id = template_identity(f"{name}@test-double", chat_template_kwargs)
        self.chat_template_kwargs = dict(chat_template_kwargs or {})  # what a real backend would render with
        self.responder = responder
        self.calls: list[ChatRequest] = []

    def _default(self, req: ChatRequest) -> str:
        prompt = "\n".join(c for _, c in req.messages)
        pick = _digest(prompt, req.seed, req.temperature)
        if req.constraint:
            import json

            kind, value = next(iter(req.constraint.items()))
            if kind == "choice":
                return value[pick % len(value)]
            if kind == "json":
                return json.dumps(instance_of(value, pick))
            raise ValueError("the test double does not synthesize regex constraints")
        titles = re.findall(r"^\[\d+\] ([^:\n]+):", prompt, flags=re.MULTILINE) or ["unknown"]
        # low temperatures agree on the first passage; higher ones wander
        choice = titles[0] if req.temperature <= 0.3 else titles[pick % min(2, len(titles))]
        return f"The passages mention {titles[0]}.\nSo the answer follows from them.\nAnswer: {choice}"

    def generate(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        out = []
        for req in requests:
            self.calls.append(req)
            text = self.responder(req) if self.responder else self._default(req)
            words = len(text.split())
            out.append(Completion(text=text, prompt_tokens=sum(len(c.split()) for _, c in req.messages),
                                  completion_tokens=min(words, req.max_tokens), finish_reason="stop"))
        return out
