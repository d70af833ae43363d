"""Solver calls shared by every method: seeds, prompts, one batch per stage.

CoT, self-consistency, the debate protocols and LMAD all build their free-form
solutions here, so identical inputs give identical requests and the call cache serves
a proposal once however many methods use it.
"""
from __future__ import annotations

import hashlib
from typing import Iterable, Sequence

from .answer_types import FREE_FORM, canonical, type_of
from .answer_types import extract as extract_typed
from .answers import extract_answer, is_yes_no_question, normalize_answer
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


def job_yes_no(question: dict) -> bool:
    """Whether answers to this question are read as yes/no at extraction."""
    return is_yes_no_question(question["question"], question["benchmark"])


#: how a question's replies are read: (answer type, read as yes/no, option texts)
Reader = tuple[str, bool, tuple[str, ...]]
SPAN_READER: Reader = ("span", False, ())


def reader_of(question: dict) -> Reader:
    """The reading of this question's replies: its answer type (span for the multi-hop sets),
    yes/no for a yes/no question, and the options a choice question lists."""
    kind = type_of(question)
    if kind in FREE_FORM:
        return ("span", job_yes_no(question), ())
    return (kind, False, tuple(question.get("choices") or ()))


def read_answer(text: str, reader: Reader = SPAN_READER) -> tuple[str, str]:
    """(answer, the form it was found in) of a reply, by the question's answer type; never raises."""
    kind, yes_no, choices = reader
    if kind == "span":
        return extract_answer(text, yes_no=yes_no)
    return extract_typed(text, kind, n_choices=len(choices), choices=choices)


def answer_key(answer: str, reader: Reader = SPAN_READER) -> str:
    """The key answers are grouped by: the official normalization for spans, the canonical form
    of the answer type otherwise (so 1/2 and 0.5, (B) and B, share one key)."""
    return normalize_answer(answer) if reader[0] == "span" else canonical(answer, reader[0])


def sample_rows(backend: Backend, jobs: Iterable[dict]) -> list[dict]:
    """Run solver jobs as ONE batch. A job is a ``samples`` row's identity columns
    (qid, stage, round, agent, temperature, seed) plus its ``request`` and ``reader`` (how its
    question's replies are read: :func:`reader_of`)."""
    jobs = list(jobs)
    completions = backend.generate([j["request"] for j in jobs])
    rows = []
    for job, c in zip(jobs, completions):
        reader = job.get("reader", SPAN_READER)
        answer, method = read_answer(c.text, reader)
        rows.append({k: v for k, v in job.items() if k not in ("request", "reader")} | {
            "response": c.text, "answer": answer, "answer_norm": answer_key(answer, reader),
            "answer_method": method, "prompt_tokens": c.prompt_tokens,
            "completion_tokens": c.completion_tokens, "finish_reason": c.finish_reason, "cached": c.cached,
        })
    return rows
