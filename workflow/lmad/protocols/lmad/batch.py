"""One batched model call per stage (the cost columns of its rows: ``lmad.cost.call_columns``)."""
from __future__ import annotations

from typing import Sequence

from ...backends import Backend, ChatRequest, Completion


def run_batch(backend: Backend, requests: Sequence[ChatRequest]) -> list[Completion]:
    """All of a stage's requests in ONE ``generate`` call; nothing is sent (and no
    model is loaded) when there is nothing to do."""
    return backend.generate(list(requests)) if requests else []
