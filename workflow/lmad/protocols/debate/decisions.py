"""Decision rules, chosen by name in a protocol: when a question stops, and its answer.

Judge and moderator replies are parsed strictly (``json.loads`` of the whole reply, the
exact keys, the exact types); anything else is a recorded parse error that falls back —
an unparsable judge counts as "not decided", an unparsable moderator gives the
majority vote (stop reason ``moderator_fallback``). Model output is never evaluated.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Callable, Sequence

from ...answers import Reading
from ...model_json import load_model_json

#: Structured-output constraints of the judge and the moderator.
JUDGE_SCHEMA = {
    "type": "object",
    "properties": {"decided": {"type": "boolean"}, "answer": {"type": "string"}},
    "required": ["decided", "answer"],
    "additionalProperties": False,
}
MODERATOR_SCHEMA = {
    "type": "object",
    "properties": {"answer": {"type": "string"}},
    "required": ["answer"],
    "additionalProperties": False,
}

#: Every stop reason a debate prediction can carry.
DEBATE_STOP_REASONS = ("vote", "vote_tie", "consensus", "judge", "moderator", "moderator_fallback", "chair",
                       "chair_fallback")


@dataclass(frozen=True)
class Verdict:
    """A parsed judge or moderator reply; ``error`` is empty when the reply was valid."""

    decided: bool
    answer: str
    error: str = ""

    def as_json(self) -> str:
        return json.dumps({"decided": self.decided, "answer": self.answer}) if not self.error else ""


def _load_object(text: str, keys: set[str]) -> tuple[dict | None, str]:
    obj, error = load_model_json(text)
    if error:
        return None, f"invalid JSON: {error}"
    if not isinstance(obj, dict) or set(obj) != keys:
        got = sorted(obj) if isinstance(obj, dict) else type(obj).__name__
        return None, f"expected an object with exactly the keys {sorted(keys)}, got {got}"
    if not isinstance(obj.get("answer"), str):
        return None, "'answer' must be a string"
    return obj, ""


def _read(answer: str, reading: Reading) -> str:
    """A verdict's ``answer`` field read like an agent's answer line (the field is the answer: an
    option's text names its letter, "The answer is B" is B)."""
    if not answer.strip(" \t\r\n*_`\"'.:"):  # blank: the marker's own word is no answer
        return ""
    return reading.extract(f"Answer: {answer}")[0]


def parse_judge(text: str, reading: Reading) -> Verdict:
    """``{"decided": bool, "answer": str}``; a decision without a usable answer is not one. The
    answer is read like every agent's reply to the question (``reading``)."""
    obj, error = _load_object(text, {"decided", "answer"})
    if error:
        return Verdict(False, "", error)
    if not isinstance(obj["decided"], bool):
        return Verdict(False, "", "'decided' must be true or false")
    answer = _read(obj["answer"], reading)
    if obj["decided"] and reading.empty(answer):
        return Verdict(False, "", "decided without an answer")
    return Verdict(obj["decided"], answer if obj["decided"] else "")


def parse_moderator(text: str, reading: Reading) -> Verdict:
    """``{"answer": str}`` with an answer the question's type reads (``reading``)."""
    obj, error = _load_object(text, {"answer"})
    if error:
        return Verdict(False, "", error)
    answer = _read(obj["answer"], reading)
    if reading.empty(answer):
        return Verdict(False, "", "empty answer")
    return Verdict(True, answer)


# -------------------------------------------------------------------- stop rules by name

Stopped = tuple[str, str]  # (stop reason, prediction)


def _never(answers: Sequence[str], verdict: Verdict | None, reading: Reading) -> Stopped | None:
    return None


def _consensus(answers: Sequence[str], verdict: Verdict | None, reading: Reading) -> Stopped | None:
    return ("consensus", reading.vote(answers)[0]) if reading.agree(answers) else None


def _judge(answers: Sequence[str], verdict: Verdict | None, reading: Reading) -> Stopped | None:
    return ("judge", verdict.answer) if verdict is not None and verdict.decided else None


#: stop rule name -> (the agents' answers, the round's verdict, the question's reading) -> stop or None
STOP_RULES: dict[str, Callable[[Sequence[str], Verdict | None, Reading], Stopped | None]] = {
    "rounds": _never, "consensus": _consensus, "judge": _judge,
}


def vote(answers: Sequence[str], reading: Reading) -> Stopped:
    """The typed majority over the agents' answers in agent order (tie: lowest index)."""
    answer, info = reading.vote(answers)
    return ("vote_tie" if info["tie"] else "vote"), answer
