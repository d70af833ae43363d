"""Answers, read and compared only through their question's answer type.

One registered class per type, one module each (:mod:`.span`, :mod:`.yes_no`,
:mod:`.numeric`, :mod:`.latex_math`, :mod:`.choice`, :mod:`.opinion`), each owning the answer
line a prompt ends with, extraction, canonical form, equivalence, the empty test, vote
grouping, agreement and scoring (:class:`.base.AnswerType`). Every function here takes the type,
a question's :class:`Reading` or its :class:`Gold`: there is no default type, and a missing one
is an error (docs/task-families.md "Answer types").

Model output is untrusted text: parsed with regular expressions, never evaluated; no function
raises on model text, and extraction names the form that matched so that fallbacks are counted.
"""
from __future__ import annotations

import functools
from collections.abc import Sequence as SequenceABC
from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

# registration order is the order of the config schema's answer types
from . import span, yes_no, numeric, latex_math, choice, opinion  # noqa: F401
from .base import TYPES, AnswerType, get
from .opinion import answer_distribution, jensen_shannon, opinion_similarity
from .text import THINK_REMOVED, strip_think

__all__ = [
    "TYPES", "ANSWER_TYPES", "FREE_FORM", "AnswerType", "get", "Reading", "reading_of", "type_of", "key_of",
    "extract", "canonical", "equivalent", "is_correct", "majority_vote", "all_agree", "group_keys", "same_answer",
    "answer_instruction", "Gold", "gold_of", "golds_of", "gold_correct", "jensen_shannon", "answer_distribution",
    "opinion_similarity", "THINK_REMOVED", "strip_think",
]

ANSWER_TYPES = tuple(TYPES)
#: the free-form types: scored by the official EM/F1 and the LLM judge
FREE_FORM = tuple(name for name, t in TYPES.items() if t.free_form)


# ------------------------------------------------------------------ by the type's name

def extract(text, answer_type: str, n_choices: int = 0, choices: Sequence[str] = ()) -> tuple[str, str]:
    """(answer, the form that matched) of a reply; a yes/no type reads yes or no. Never raises
    on the text."""
    return get(answer_type).extract(text, choices=choices, n_choices=n_choices)


def canonical(answer, answer_type: str) -> str:
    """The answer's grouping key ("" when it gives none)."""
    return get(answer_type).canonical(answer)


def equivalent(a, b, answer_type: str) -> bool:
    """Whether two answers are one answer of this type (an empty one is equivalent to nothing)."""
    return get(answer_type).equivalent(a, b)


def is_correct(pred, golds, answer_type: str, rules: str = "hotpotqa") -> bool | None:
    """Whether a prediction is right by the type's rule (None: the type has no gold)."""
    return get(answer_type).is_correct(pred, golds, rules)


def majority_vote(answers: Sequence[str], answer_type: str, order_key=None) -> tuple[str, dict]:
    """The type's vote (:meth:`.base.AnswerType.vote`)."""
    return get(answer_type).vote(answers, order_key)


def all_agree(answers: Sequence[str], answer_type: str) -> bool:
    """At least one answer, none empty, all equivalent."""
    return get(answer_type).agree(answers)


def group_keys(answers: Sequence[str], answer_type: str) -> list[str]:
    """Each answer's vote group with agents in index order ("" for an empty answer)."""
    return get(answer_type).group_keys(answers)


def same_answer(a, b, answer_type: str) -> bool:
    """Equal canonical forms (two empty answers included), else equivalent."""
    return get(answer_type).same(a, b)


def answer_instruction(answer_type: str, n_choices: int = 0) -> str:
    """The type's default answer-format line."""
    return get(answer_type).instruction(n_choices)


# ------------------------------------------------------------------ by the question

@dataclass(frozen=True)
class Reading:
    """How one question's replies are read and compared: its answer type, whether a span
    question asks yes or no (extraction then reads "Yes, they are." as "yes"), and the options
    a choice question lists."""

    answer_type: str
    yes_no: bool = False
    choices: tuple[str, ...] = ()

    def __post_init__(self):
        get(self.answer_type)

    @property
    def kind(self) -> AnswerType:
        return TYPES[self.answer_type]

    def extract(self, text) -> tuple[str, str]:
        return self.kind.extract(text, choices=self.choices, yes_no=self.yes_no, n_choices=len(self.choices))

    def instruction(self) -> str:
        """The answer line its prompts end with: a span question asking yes or no gets the yes/no type's."""
        return (get("yes_no") if self.yes_no else self.kind).instruction(len(self.choices))

    def key(self, answer) -> str:
        return self.kind.canonical(answer or "")

    def empty(self, answer) -> bool:
        return self.kind.is_empty(answer)

    def vote(self, answers: Sequence[str], order_key=None) -> tuple[str, dict]:
        return self.kind.vote(answers, order_key)

    def agree(self, answers: Sequence[str]) -> bool:
        return self.kind.agree(answers)

def type_of(question: Mapping) -> str:
    """A ``questions`` row's answer type; a row without one is an error, never a span."""
    name = question.get("answer_type")
    if not name:
        raise ValueError(f"question {question.get('qid', '?')!r} of {question.get('dataset', '?')!r} has no "
                         "answer_type: every questions row names it (rerun prepare_data)")
    return get(name).name


def reading_of(question: Mapping) -> Reading:
    """The :class:`Reading` of a ``questions`` row. Readings are immutable and made once per
    distinct question text or option list: a stage asks for one per call (a third of a million
    at 4 x 500 questions, L = 10), and a span question's yes/no test is a regex match."""
    kind = type_of(question)
    if kind == "span":
        return _span_reading(question.get("question") or "", question.get("benchmark") or "")
    return _reading(kind, tuple(str(c) for c in question.get("choices") or ()))


@functools.lru_cache(maxsize=1 << 14)
def _span_reading(text: str, benchmark: str) -> Reading:
    return Reading("span", span.is_yes_no_question(text, benchmark))


@functools.lru_cache(maxsize=1 << 10)
def _reading(kind: str, choices: tuple[str, ...]) -> Reading:
    return Reading(kind, kind == "yes_no", choices)


def key_of(answer, question: Mapping) -> str:
    """The grouping key of an answer to this question."""
    return canonical(answer or "", type_of(question))


# ------------------------------------------------------------------ golds

@dataclass(frozen=True)
class Gold(SequenceABC):
    """A question's gold answers (answer, then aliases) with what comparing an answer with them
    needs: the answer type and, for the free-form types, the benchmark's official scoring rules.
    A sequence of the gold strings, so code that reads only the strings takes it as a list."""

    answers: tuple[str, ...]
    answer_type: str
    rules: str = "hotpotqa"
    choices: tuple[str, ...] = ()  # a choice question's options, as listed

    def __post_init__(self):
        get(self.answer_type)

    def __getitem__(self, i):
        return self.answers[i]

    def __len__(self) -> int:
        return len(self.answers)

    def correct(self, answer) -> bool:
        """Whether an answer is right by its question's rule; no gold (opinions): False."""
        return bool(get(self.answer_type).is_correct(answer if isinstance(answer, str) else "", self.answers, self.rules))

    def mentioned_in(self, text: str) -> bool:
        """Whether ``text`` (a repair's words) states a gold answer, by the type's rule."""
        return any(get(self.answer_type).mentions(text, g, self.choices) for g in self.answers)


def gold_of(question: Mapping) -> Gold:
    """The :class:`Gold` of a ``questions`` row (answer, aliases, answer_type, benchmark)."""
    kind = type_of(question)
    raw = [question.get("answer"), *(question.get("aliases") or [])]
    golds = tuple(g for g in raw if isinstance(g, str) and (g or kind != "opinion"))
    return Gold(golds, kind, span.rules_of(question.get("benchmark")) if get(kind).free_form else "hotpotqa",
                tuple(str(c) for c in question.get("choices") or ()))


def golds_of(questions: Iterable[Mapping]) -> dict[tuple[str, str], Gold]:
    """{(dataset, qid): Gold} of ``questions`` rows."""
    return {(q["dataset"], q["qid"]): gold_of(q) for q in questions}


def gold_correct(answer, gold: Gold) -> bool:
    """Whether an answer is right by its question's own rule (:meth:`Gold.correct`)."""
    if not isinstance(gold, Gold):
        raise TypeError(f"gold_correct needs the question's Gold (answers and answer type), got {type(gold).__name__}")
    return gold.correct(answer)
