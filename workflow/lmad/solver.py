"""Solver calls shared by every method: seeds, prompts, one batch per stage.

CoT, self-consistency, the debate protocols and LMAD all build their free-form
solutions here, so identical inputs give identical requests and the call cache serves
a proposal once however many methods use it.
"""
from __future__ import annotations

import hashlib
from typing import Iterable, Sequence

from .answers import extract_answer, is_yes_no_question, normalize_answer
from .backends import Backend, ChatRequest
from .prompts import Prompt, format_committed, format_context


def derive_seed(base: int, *parts) -> int:
    """A 31-bit seed from the run seed and a call's identity, stable across machines."""
    blob = "\x00".join(map(str, (base, *parts))).encode()
    return int(hashlib.sha256(blob).hexdigest()[:8], 16) & 0x7FFFFFFF


ANSWER_LINES = {
    "yes/no": 'Then finish with a last line of the form "Answer: yes" or "Answer: no".',
    "short": 'Then finish with a last line of the form "Answer: <short answer>".',
}


def answer_type(question: dict) -> str:
    """``yes/no`` for a yes/no question (:func:`lmad.answers.is_yes_no_question`: every
    StrategyQA question, and questions that open with an auxiliary, "Were Scott Derrickson and
    Ed Wood of the same nationality?"); ``short`` otherwise. Never read from the gold answer."""
    return "yes/no" if job_yes_no(question) else "short"


def solver_request(prompt: Prompt, question: dict, temperature: float, seed: int, max_tokens: int,
                   committed: Sequence[str] = ()) -> ChatRequest:
    def build(context: Sequence[dict], fallbacks=()) -> ChatRequest:
        messages = prompt.render(context=format_context(context), question=question["question"],
                                 committed=format_committed(committed),
                                 answer_line=ANSWER_LINES[answer_type(question)])
        return ChatRequest(messages=messages, temperature=float(temperature), max_tokens=max_tokens, seed=seed,
                           fallbacks=fallbacks)

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


def sample_rows(backend: Backend, jobs: Iterable[dict]) -> list[dict]:
    """Run solver jobs as ONE batch. A job is a ``samples`` row's identity columns
    (qid, stage, round, agent, temperature, seed) plus its ``request`` and ``yes_no`` (the
    question asks for yes or no: see :func:`job_yes_no`)."""
    jobs = list(jobs)
    completions = backend.generate([j["request"] for j in jobs])
    rows = []
    for job, c in zip(jobs, completions):
        answer, method = extract_answer(c.text, yes_no=job.get("yes_no", False))
        rows.append({k: v for k, v in job.items() if k not in ("request", "yes_no")} | {
            "response": c.text, "answer": answer, "answer_norm": normalize_answer(answer),
            "answer_method": method, "prompt_tokens": c.prompt_tokens,
            "completion_tokens": c.completion_tokens, "finish_reason": c.finish_reason, "cached": c.cached,
        })
    return rows
