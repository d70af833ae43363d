"""The commit guard's model relation check (``lmad.guard.relation: model``).

The paper admits a repair only if "the question's subject and relation are preserved".
The backbone answers that itself: one call per proposed repair, at temperature 0 with a
``choice`` constraint ("yes" / "no") and its own prompt file, all repairs of a resolve
stage in one batch. A repair without a claim (not concrete, or a truncated resolver
reply) is not asked. The reply is parsed strictly: anything but exactly "yes" or "no"
(after trimming and casefolding) is recorded as a parse error and fails the check.
"""
from __future__ import annotations

from ...backends import ChatRequest
from ...prompts import Prompt

CHOICES = ["yes", "no"]
MAX_TOKENS = 4  # one constrained word


def relation_request(prompt: Prompt, question: dict, nodes: list[str]) -> ChatRequest:
    claims = "\n".join(f"- {n}" for n in nodes)
    return ChatRequest(messages=prompt.render(question=question["question"], claims=claims), temperature=0.0,
                       max_tokens=MAX_TOKENS, seed=0, constraint={"choice": CHOICES},
                       role="relation_check")


def parse_verdict(text: str) -> tuple[str, str]:
    """(verdict "yes" / "no" or "", parse error)."""
    word = (text or "").strip().strip(".").casefold()
    if word in CHOICES:
        return word, ""
    return "", f"not yes/no: {text[:80]!r}"
