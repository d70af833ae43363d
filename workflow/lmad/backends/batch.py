"""A stage's calls as ``generate`` batches: all of them in one (:func:`run_batch`), or one per
distinct backend (:func:`by_backend`, :func:`generate_by_backend`: a society's members on
perturbed weights), results in the order asked. Shared by the debate engine, LMAD and the
disagreement layers (the cost columns of their rows: ``lmad.call_accounting.call_columns``)."""
from __future__ import annotations

from collections import defaultdict
from typing import Sequence

from .base import Backend, ChatRequest, Completion


def run_batch(backend: Backend, requests: Sequence[ChatRequest]) -> list[Completion]:
    """All of a stage's requests in ONE ``generate`` call; nothing is sent (and no
    model is loaded) when there is nothing to do."""
    return backend.generate(list(requests)) if requests else []


def by_backend(jobs: Sequence[tuple[Backend, object]], run) -> list:
    """``run(backend, items)`` once per distinct backend of ``jobs`` (one batch per set of
    weights), its results put back in ``jobs`` order."""
    groups: dict[int, list[int]] = defaultdict(list)
    for i, (backend, _) in enumerate(jobs):
        groups[id(backend)].append(i)
    out: list = [None] * len(jobs)
    for idx in groups.values():
        for i, result in zip(idx, run(jobs[idx[0]][0], [jobs[i][1] for i in idx]), strict=True):
            out[i] = result
    return out


def generate_by_backend(jobs: Sequence[tuple[Backend, ChatRequest]]) -> list[Completion]:
    """Completions in ``jobs`` order, one ``generate`` batch per distinct backend."""
    return by_backend(jobs, lambda backend, requests: backend.generate(requests))
