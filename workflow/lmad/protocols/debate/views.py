"""What an agent sees: the text blocks filled into the debate prompt templates.

A block that can be absent (no advice, round 0 of DMAD, the affirmative's opening) renders
as the empty string with its own heading, so a template reads the same with or without it.
"""
from __future__ import annotations

from typing import Callable, Mapping, Sequence

from ...prompts import question_fields  # noqa: F401  (the fields every debate template may use)

Label = Callable[[int], str]


def labelled(texts: Mapping[int, str], label: Label) -> str:
    """Responses in agent order, each under its agent's label."""
    return "\n\n".join(f"{label(j)}:\n{texts[j].strip()}" for j in sorted(texts))


def peers(responses: Mapping[int, str], me: int, label: Label) -> str:
    """The other agents' responses (never ``me``'s)."""
    return labelled({j: r for j, r in responses.items() if j != me}, label)


def advice(items: Sequence[tuple[str, str]]) -> str:
    """Advice addressed to one agent, in delivery order; empty when there is none."""
    if not items:
        return ""
    body = "\n\n".join(f"{who}:\n{text.strip()}" for who, text in items)
    return f"Advice on your previous answer (weigh it; you decide what to keep):\n{body}\n\n"


def final_answers(responses: Mapping[int, str], me: int, label: Label) -> str:
    """DMAD's debate context: the agent's own and the others' previous final responses
    (intermediate steps are never shown); empty in round 0."""
    if not responses:
        return ""
    return (f"Your previous final answer:\n{responses[me].strip()}\n\n"
            f"The other agents' final answers:\n{peers(responses, me, label)}\n\n")


def own_turn(text: str | None) -> str:
    return f"Your previous argument:\n{text.strip()}\n\n" if text else ""


def opponents(turns: Mapping[int, str], label: Label) -> str:
    """The other debaters' latest arguments; empty when nobody has spoken yet."""
    if not turns:
        return ""
    return "\n\n".join(f"{label(j)} argued:\n{turns[j].strip()}" for j in sorted(turns)) + "\n\n"
