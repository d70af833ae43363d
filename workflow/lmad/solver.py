"""Solver calls shared by every method: seeds, prompts, one batch per stage.

CoT, self-consistency, the debate protocols and LMAD all build their free-form
solutions here, so identical inputs give identical requests and the call cache serves
a proposal once however many methods use it.
"""
from __future__ import annotations

import hashlib
from typing import Iterable, Sequence

from .answers import Reading
from .backends import Backend, ChatRequest
from .prompts import Prompt, format_committed, question_fields


def derive_seed(base: int, *parts) -> int:
    """A 31-bit seed from the run seed and a call's identity, stable across machines."""
    blob = "\x00".join(map(str, (base, *parts))).encode()
    return int(hashlib.sha256(blob).hexdigest()[:8], 16) & 0x7FFFFFFF


def solver_request(prompt: Prompt, question: dict, temperature: float, seed: int, max_tokens: int,
                   committed: Sequence[str] = ()) -> ChatRequest:
    def build(context: Sequence[dict], fallbacks=()) -> ChatRequest:
        messages = prompt.render(**question_fields(question, context), committed=format_committed(committed))
        return ChatRequest(messages=messages, temperature=float(temperature), max_tokens=max_tokens, seed=seed,
                           fallbacks=fallbacks, role="solver")

    return build(question["context"], DroppingDistractors(build, question))


class DroppingDistractors:
    """The fallbacks of a solver request that does not fit the model's context window: the
    same request with distractor paragraphs (no supporting fact) dropped one at a time, last
    first, down to the supporting paragraphs alone. Rendered only when iterated (only for a
    request found too long), so a batch holds one prompt per request."""

    def __init__(self, build, question: dict):
        self.build, self.question = build, question

    def __iter__(self):
        context = self.question["context"]
        facts = self.question.get("supporting_facts") or []
        supporting = {f["paragraph"] for f in facts if f.get("paragraph") is not None}
        titles = {f["title"] for f in facts if f.get("paragraph") is None}
        keep = [i in supporting or p["title"] in titles for i, p in enumerate(context)]
        kept = set(range(len(context)))
        for i in reversed(range(len(context))):
            if not keep[i]:
                kept.discard(i)
                yield self.build([p for j, p in enumerate(context) if j in kept])


def sample_rows(backend: Backend, jobs: Iterable[dict]) -> list[dict]:
    """Run solver jobs as ONE batch. A job is a ``samples`` row's identity columns
    (qid, stage, round, agent, temperature, seed) plus its ``request`` and ``reading`` (how its
    question's replies are read: :func:`lmad.answers.reading_of`)."""
    jobs = list(jobs)
    completions = backend.generate([j["request"] for j in jobs])
    rows = []
    for job, c in zip(jobs, completions):
        reading: Reading = job["reading"]
        answer, method = reading.extract(c.text)
        rows.append({k: v for k, v in job.items() if k not in ("request", "reading")} | {
            "response": c.text, "answer": answer, "answer_norm": reading.key(answer),
            "answer_method": method, "prompt_tokens": c.prompt_tokens,
            "completion_tokens": c.completion_tokens, "finish_reason": c.finish_reason, "cached": c.cached,
        })
    return rows
