"""Prompt templates: one file per role under config/prompts.

A template file has a ``### system`` and a ``### user`` section; ``$name`` placeholders
are filled with ``string.Template`` (JSON braces in a prompt need no escaping). A
missing field fails with the template's path and the field's name.
"""
from __future__ import annotations

import functools
import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from string import Template
from typing import Sequence

from .answers import reading_of

_SECTION = re.compile(r"^### (system|user)\s*$", re.MULTILINE)


class PromptError(ValueError):
    pass


@functools.lru_cache(maxsize=256)
def _pieces(template: str) -> tuple[tuple[bool, str], ...] | None:
    """``template`` as (is a field, text) pieces, by ``string.Template``'s own pattern, parsed
    once per template rather than once per call; None when a placeholder is invalid."""
    out, pos = [], 0
    for m in Template.pattern.finditer(template):
        name = m.group("named") or m.group("braced")
        if name is None and m.group("escaped") is None:
            return None
        out.append((False, template[pos:m.start()]))
        out.append((True, name) if name is not None else (False, Template.delimiter))
        pos = m.end()
    out.append((False, template[pos:]))
    return tuple(out)


def _substitute(template: str, fields: dict) -> str:
    """``Template(template).substitute(fields)``, the same text and errors."""
    pieces = _pieces(template)
    if pieces is None:  # Template itself raises, with its message
        return Template(template).substitute(fields)
    return "".join(str(fields[text]) if field else text for field, text in pieces)


@dataclass(frozen=True)
class Prompt:
    path: str
    system: str
    user: str

    @property
    def sha(self) -> str:
        return hashlib.sha256(f"{self.system}\x00{self.user}".encode()).hexdigest()[:16]

    def render(self, **fields: str) -> tuple[tuple[str, str], ...]:
        try:
            messages = [("user", _substitute(self.user, fields))]
            if self.system:
                messages.insert(0, ("system", _substitute(self.system, fields)))
        except KeyError as err:
            raise PromptError(f"{self.path}: template needs field {err.args[0]!r}, "
                              f"given {sorted(fields)}") from None
        except ValueError as err:
            raise PromptError(f"{self.path}: bad placeholder: {err}") from None
        return tuple(messages)


def load_prompt(path: str | Path) -> Prompt:
    text = Path(path).read_text()
    parts = _SECTION.split(text)
    # parts = [preamble, name1, body1, name2, body2, ...]; the preamble is a comment area
    sections = {name: body.strip() for name, body in zip(parts[1::2], parts[2::2])}
    if "user" not in sections:
        raise PromptError(f"{path}: no '### user' section")
    return Prompt(path=str(path), system=sections.get("system", ""), user=sections["user"])


def format_context(context: Sequence[dict]) -> str:
    """Numbered, titled paragraphs; quotations are later checked against this text."""
    return "\n".join(f"[{i}] {p['title']}: {' '.join(p['sentences'])}" for i, p in enumerate(context, 1))


def format_committed(nodes: Sequence[str]) -> str:
    """The committed state P as a prompt block; empty P renders as nothing, so the
    first LMAD iteration sends exactly the self-consistency prompt."""
    if not nodes:
        return ""
    lines = "\n".join(f"- {n}" for n in nodes)
    return f"Established facts (already verified; build on them, do not re-argue them):\n{lines}\n\n"


# How a template names the task where its text depends on the task family: questions with
# passages (the multi-hop sets, StrategyQA's facts) read exactly as the multi-hop prompts always
# did; the others have no passages block and name their own task and evidence.
_TASK_TEXT = {
    "passages": ("multi-hop questions using the given passages", "multi-hop questions from the given passages",
                 "using only facts from the passages"),
    "numeric": ("math word problems by careful calculation", "math word problems", "checking every calculation"),
    "math": ("competition math problems", "competition math problems", "checking every step of the derivation"),
    "choice": ("multiple-choice questions", "multiple-choice questions", "using only facts you are sure of"),
    "opinion": ("survey questions by choosing one of the options", "survey questions", "giving your honest reasons"),
}
# What a template calls the question and its evidence, by the same families: ``question_kind``
# ("a $question_kind": each starts with a consonant), ``evidence`` (plural and without its article:
# "the $evidence", "the given $evidence", "do the $evidence support") and ``quote_source`` (the
# evidence before a noun: "$quote_source text"). A task without passages quotes its own statement
# and options (the commit guard's ``evidence_of``), so its evidence is the problem or question.
_TASK_NOUNS = {
    "passages": ("multi-hop question", "passages", "passage"),
    "numeric": ("math problem", "conditions of the problem", "problem"),
    "math": ("competition math problem", "conditions of the problem", "problem"),
    "choice": ("multiple-choice question", "question and its options", "question"),
    "opinion": ("survey question", "question and its options", "question"),
}
_ANSWER_FORM = {"numeric": "<number>", "math": "<final answer>", "choice": "<letter>", "opinion": "<letter>"}


def question_text(question: dict) -> str:
    """The question as the model reads it: a choice question lists its options, lettered."""
    choices = question.get("choices") or []
    if not choices:
        return question["question"]
    return question["question"] + "\n" + "\n".join(f"({chr(65 + i)}) {c}" for i, c in enumerate(choices))


def answer_type(question: dict) -> str:
    """``yes/no`` for a question read as yes or no (every StrategyQA question, and span
    questions that open with an auxiliary, "Were Scott Derrickson and Ed Wood of the same
    nationality?"); ``short`` for another free-form one. Never read from the gold answer."""
    return "yes/no" if reading_of(question).yes_no else "short"


def question_fields(question: dict, context: Sequence[dict] | None = None) -> dict[str, str]:
    """The fields every template may use about its question: ``passages`` (the numbered
    paragraphs under a heading, or nothing when the question has none), ``context``, the
    question with its options, the task's wording (``task_intro``, ``task_debate``,
    ``evidence_rule``; ``question_kind``, ``evidence``, ``quote_source``) and the answer format
    (``answer_line``, ``answer_form``) of its answer type. ``context`` replaces the question's
    paragraphs (distractors dropped to fit a window)."""
    context = question["context"] if context is None else context
    reading = reading_of(question)
    kind, free_form = reading.answer_type, reading.kind.free_form
    family = "passages" if context or free_form else kind
    intro, debate, evidence = _TASK_TEXT[family]
    kind_noun, evidence_noun, quote_source = _TASK_NOUNS[family]
    text = format_context(context)
    line, form = reading.instruction(), "<short answer>" if free_form else _ANSWER_FORM[kind]
    return {"context": text, "passages": f"Passages:\n{text}\n\n" if context else "", "question": question_text(question),
            "task_intro": intro, "task_debate": debate, "evidence_rule": evidence, "question_kind": kind_noun,
            "evidence": evidence_noun, "quote_source": quote_source, "answer_line": line, "answer_form": form}
