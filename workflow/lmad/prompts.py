"""Prompt templates: one file per role under config/prompts.

A template file has a ``### system`` and a ``### user`` section; ``$name`` placeholders
are filled with ``string.Template`` (JSON braces in a prompt need no escaping). A
missing field fails with the template's path and the field's name.

A paper's prompt set may override the answer types' default answer lines (``$answer_line``,
:meth:`lmad.answers.base.AnswerType.instruction`) for its own templates only: a section
``### answer_line <type>`` (e.g. ``### answer_line numeric``) replaces the line for questions of
that type when the template is rendered; it may use ``$option_letters`` ("A, B, C or D"). The
shared defaults stay as they are for every other template (config/prompts/truemad/ is one such set).
"""
from __future__ import annotations

import functools
import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from string import Template
from typing import Sequence

from .answers import ANSWER_TYPES, reading_of
from .answers.choice import letter_list, n_letters

_SECTION = re.compile(r"^### (system|user|answer_line [A-Za-z_]+)\s*$", re.MULTILINE)
_ANSWER_LINE = "answer_line "


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
    #: (answer type, answer line) pairs that replace the type's default ``$answer_line``
    answer_lines: tuple[tuple[str, str], ...] = ()

    @property
    def sha(self) -> str:
        own = "".join(f"\x00{kind}\x00{line}" for kind, line in self.answer_lines)
        return hashlib.sha256(f"{self.system}\x00{self.user}{own}".encode()).hexdigest()[:16]

    def answer_line(self, fields: dict) -> str | None:
        """This template's own answer line for the question of ``fields`` (its ``answer_kind``),
        filled with ``$option_letters``; None when the template keeps the type's default."""
        line = dict(self.answer_lines).get(fields.get("answer_kind", ""))
        if line is None:
            return None
        return _substitute(line, {"option_letters": fields.get("option_letters", "")})

    def render(self, **fields: str) -> tuple[tuple[str, str], ...]:
        try:
            own = self.answer_line(fields)
            if own is not None:
                fields = {**fields, "answer_line": own}
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
    lines = []
    for name, body in sections.items():
        if name.startswith(_ANSWER_LINE):
            kind = name[len(_ANSWER_LINE):]
            if kind not in ANSWER_TYPES:
                raise PromptError(f"{path}: '### {name}': unknown answer type {kind!r}; expected one of "
                                  f"{', '.join(ANSWER_TYPES)}")
            lines.append((kind, body))
    return Prompt(path=str(path), system=sections.get("system", ""), user=sections["user"], answer_lines=tuple(lines))


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
    (``answer_line``, ``answer_form``) of its answer type, with that type's name (``answer_kind``) and a
    choice question's letters (``option_letters``, "A, B, C or D"; "" otherwise), by which a prompt
    set's own answer lines are chosen and filled (:meth:`Prompt.answer_line`). ``context`` replaces the question's
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
            "evidence": evidence_noun, "quote_source": quote_source, "answer_line": line, "answer_form": form,
            "answer_kind": "yes_no" if reading.yes_no else kind,
            "option_letters": letter_list(n_letters(len(reading.choices))) if kind == "choice" else ""}
