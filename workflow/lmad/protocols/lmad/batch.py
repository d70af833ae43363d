"""One batched model call per stage, with the cost columns every call row carries."""
from __future__ import annotations

from typing import Sequence

from ...backends import Backend, ChatRequest, Completion


def call_columns(c: Completion) -> dict:
    return {"prompt_tokens": c.prompt_tokens, "completion_tokens": c.completion_tokens,
            "finish_reason": c.finish_reason, "cached": c.cached}


def run_batch(backend: Backend, requests: Sequence[ChatRequest]) -> list[Completion]:
    """All of a stage's requests in ONE ``generate`` call; nothing is sent (and no
    model is loaded) when there is nothing to do."""
    return backend.generate(list(requests)) if requests else []
