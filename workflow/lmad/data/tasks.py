"""Raw records of the math, multiple-choice, truthfulness and opinion benchmarks, in their
original schemas (and their usual Hugging Face copies), as the canonical question's fields.

None of them has passages: ``context`` and ``supporting_facts`` are empty. A choice question
carries its option texts in the order shown (``choices``); where the source stores the correct
option in a fixed place (GPQA's ``Correct Answer`` column, TruthfulQA's first mc1 choice) the
options are shuffled by a permutation seeded by the run seed and the question id, recorded in
``choice_order`` (position i shows source option ``choice_order[i]``). The gold of a choice
question is its letter.

| benchmark | fields read | usual HF copy |
|---|---|---|
| gsm8k | question, answer (worked solution ending ``#### n``) | openai/gsm8k (main) |
| math500 | problem, answer, subject, unique_id | HuggingFaceH4/MATH-500 |
| aime | id, problem, answer (or ID, Problem, Answer) | Maxwell-Jia/AIME_2024 |
| amc12 | id, problem, answer | AI-MO/aimo-validation-amc |
| olympiadbench | id, question, final_answer (list), is_multiple_answer, unit, context, subfield | Hothan/OlympiadBench |
| gpqa-diamond | Question, Correct Answer, Incorrect Answer 1-3, Record ID, Subdomain | Idavidrein/gpqa (gpqa_diamond) |
| mmlu | question, subject, choices (4), answer (index or letter) | cais/mmlu |
| mmlu-redux | MMLU's fields + error_type | edinburgh-dawg/mmlu-redux |
| truthfulqa | question, mc1_targets {choices, labels} (or {option: label}) | truthfulqa/truthful_qa (multiple_choice) |
| globalopinionqa | question, selections (Python-repr dict), options (Python-repr list), source | Anthropic/llm_global_opinions |

Golds are kept as the source writes them (AMC's ``27.0``, AIME's ``025``, LaTeX); scoring
(``lmad.answers``) normalises them. GSM8K's gold is the number after ``####``, thousands
commas removed. Rows without an id get ``<benchmark>-`` + 12 hex digits of sha256 of their
content (GSM8K: the question; MMLU: subject, question, options; TruthfulQA: the question;
GlobalOpinionQA: source, question, options and survey). OlympiadBench's ``context`` goes
before the question and its ``unit`` is named after it. GlobalOpinionQA's reprs are read as
literals only (``ast.literal_eval`` of the ``{...}`` / ``[...]`` text, a ``defaultdict(<class
'list'>, ...)`` wrapper removed first), never evaluated.
"""
from __future__ import annotations

import ast
import hashlib
import json
import math
import random
import re
from typing import Any, Callable

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"

_NUMBER = re.compile(r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)")


class TaskDataError(ValueError):
    """Raised by the converters; ``convert`` turns it into its ``DataError``."""


def _error(where: str, field: str, problem: str) -> TaskDataError:
    return TaskDataError(f"{where}: field '{field}': {problem}")


def _get(raw: dict, names: tuple[str, ...], where: str) -> tuple[str, Any]:
    for name in names:
        if raw.get(name) is not None:
            return name, raw[name]
    raise _error(where, names[0], "required field is missing")


def _text(raw: dict, names: tuple[str, ...], where: str) -> str:
    name, value = _get(raw, names, where)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str) or not value.strip():
        raise _error(where, name, f"expected a non-empty string, got {value!r:.60}")
    return value.strip()


def _qid(raw: dict, names: tuple[str, ...], benchmark: str, text: str) -> str:
    """The source's id, else a content hash of the question (stable across copies and order)."""
    for name in names:
        if raw.get(name) not in (None, ""):
            return str(raw[name])
    return f"{benchmark}-{hashlib.sha256(text.encode()).hexdigest()[:12]}"


def _fields(qid, question, answer, qtype, choices=(), order=(), aliases=(), survey="") -> dict:
    """The canonical question's fields (its answer type is the benchmark's, ``lmad.data.benchmarks``)."""
    return {"qid": qid, "question": question, "context": [], "answer": answer, "aliases": list(aliases),
            "qtype": qtype, "supporting_facts": [], "choices": list(choices), "choice_order": list(order),
            "survey": survey}


def _shuffled(options: list[str], correct: int, seed: int, qid: str) -> tuple[list[str], list[int], str]:
    """(options as shown, source index per position, gold letter): a permutation drawn from
    sha256(seed, qid), so it is the same on every machine and for every method."""
    order = list(range(len(options)))
    random.Random(hashlib.sha256(f"{seed}\0{qid}".encode()).digest()).shuffle(order)
    return [options[i] for i in order], order, LETTERS[order.index(correct)]


# ----------------------------------------------------------------------------- math

def gsm8k(raw: dict, where: str, seed: int) -> dict:
    question = _text(raw, ("question",), where)
    solution = _text(raw, ("answer",), where)
    m = re.search(r"####\s*(.+?)\s*$", solution)
    gold = m.group(1).replace(",", "").strip() if m else ""
    if not _NUMBER.fullmatch(gold):
        raise _error(where, "answer", f"expected a worked solution ending in '#### <number>', got ...{solution[-30:]!r}")
    return _fields(_qid(raw, ("id", "qid"), "gsm8k", question), question, gold, "gsm8k")


def math500(raw: dict, where: str, seed: int) -> dict:
    problem = _text(raw, ("problem",), where)
    return _fields(_qid(raw, ("unique_id", "id"), "math500", problem), problem, _text(raw, ("answer",), where),
                   str(raw.get("subject") or "math500"))


def numeric_contest(benchmark: str) -> Callable[[dict, str, int], dict]:
    def convert(raw: dict, where: str, seed: int) -> dict:
        problem = _text(raw, ("problem", "Problem", "question"), where)
        return _fields(_qid(raw, ("id", "ID", "url"), benchmark, problem), problem,
                       _text(raw, ("answer", "Answer"), where), benchmark)
    return convert


def olympiadbench(raw: dict, where: str, seed: int) -> dict:
    question = _text(raw, ("question",), where)
    context = raw.get("context")
    if isinstance(context, str) and context.strip():
        question = f"{context.strip()}\n\n{question}"
    unit = raw.get("unit")
    if isinstance(unit, str) and unit.strip():  # the gold is the bare value; the unit is part of the problem
        question = f"{question}\nThe unit of the answer is {unit.strip()}."
    name, finals = _get(raw, ("final_answer",), where)
    if isinstance(finals, str):
        finals = [finals]
    if not isinstance(finals, list) or not finals or not all(isinstance(f, str) and f.strip() for f in finals):
        raise _error(where, name, "expected a non-empty list of answer strings")
    gold = ", ".join(f.strip() for f in finals) if raw.get("is_multiple_answer") else finals[0].strip()
    return _fields(_qid(raw, ("id",), "olympiadbench", question), question, gold,
                   str(raw.get("subfield") or "olympiadbench"))


# ----------------------------------------------------------------------------- choice

def _options(raw: dict, names: tuple[str, ...], where: str) -> tuple[str, list[str]]:
    name, value = _get(raw, names, where)
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            raise _error(where, name, "got a string that is not a JSON list") from None
    if (not isinstance(value, list) or not 2 <= len(value) <= len(LETTERS)
            or not all(isinstance(c, (str, int, float)) and not isinstance(c, bool) for c in value)):
        raise _error(where, name, f"expected a list of 2 to {len(LETTERS)} options")
    return name, [str(c).strip() for c in value]


def mmlu(raw: dict, where: str, seed: int) -> dict:
    question = _text(raw, ("question",), where)
    name, choices = _options(raw, ("choices",), where)
    key, answer = _get(raw, ("answer",), where)
    if isinstance(answer, str) and len(answer.strip()) == 1 and answer.strip().upper() in LETTERS[:len(choices)]:
        index = LETTERS.index(answer.strip().upper())
    elif isinstance(answer, int) and not isinstance(answer, bool) and 0 <= answer < len(choices):
        index = answer
    else:
        raise _error(where, key, f"expected an option index 0-{len(choices) - 1} or a letter, got {answer!r:.40}")
    subject = str(raw.get("subject") or "mmlu")
    qid = _qid(raw, ("id", "qid"), "mmlu", f"{subject}\0{question}\0{choices}")
    # MMLU already places the correct option at random: shown as stored
    return _fields(qid, question, LETTERS[index], subject, choices)


def gpqa(raw: dict, where: str, seed: int) -> dict:
    question = _text(raw, ("Question", "question"), where)
    correct = _text(raw, ("Correct Answer",), where)
    wrong = [_text(raw, (f"Incorrect Answer {i}",), where) for i in (1, 2, 3)]
    qid = _qid(raw, ("Record ID", "id"), "gpqa", question)
    shown, order, gold = _shuffled([correct, *wrong], 0, seed, qid)
    return _fields(qid, question, gold, str(raw.get("Subdomain") or "gpqa"), shown, order)


def truthfulqa(raw: dict, where: str, seed: int) -> dict:
    question = _text(raw, ("question",), where)
    name, mc1 = _get(raw, ("mc1_targets",), where)
    if isinstance(mc1, str):
        try:
            mc1 = json.loads(mc1)
        except json.JSONDecodeError:
            raise _error(where, name, "got a string that is not JSON") from None
    choices, labels = None, None
    if isinstance(mc1, dict) and set(mc1) == {"choices", "labels"}:  # the HF copy
        choices, labels = mc1["choices"], mc1["labels"]
    elif isinstance(mc1, dict) and all(v in (0, 1) for v in mc1.values()):  # the original mc_task.json
        choices, labels = list(mc1), list(mc1.values())
    if not isinstance(choices, list) or not isinstance(labels, list) or len(choices) != len(labels) or len(choices) < 2:
        raise _error(where, name, "expected {choices: [...], labels: [...]} of equal length (at least 2)")
    if len(choices) > len(LETTERS) or not all(isinstance(c, str) and c.strip() for c in choices):
        raise _error(where, name, f"expected 2 to {len(LETTERS)} non-empty choice strings")
    if sorted(labels) != [0] * (len(labels) - 1) + [1]:
        raise _error(where, name, f"mc1 labels must mark exactly one choice with 1, got {labels!r:.60}")
    qid = _qid(raw, ("id",), "truthfulqa", question)
    shown, order, gold = _shuffled([str(c).strip() for c in choices], labels.index(1), seed, qid)
    return _fields(qid, question, gold, "truthfulqa", shown, order)


# ----------------------------------------------------------------------------- opinion

_DEFAULTDICT = re.compile(r"^\s*defaultdict\(\s*<class '(?:list|dict)'>\s*,\s*(\{.*\})\s*\)\s*$", re.DOTALL)


_MAX_LITERAL = 1_000_000  # characters; a real selections field is a few kB


def _literal(text: str, where: str, field: str, brackets: str) -> Any:
    """A Python dict or list (``brackets`` "{}" or "[]") from its repr: the text must be one
    bracketed literal (a dict optionally wrapped in ``defaultdict(<class 'list'>, ...)``), and
    ``ast.literal_eval`` builds literals only, never running code; anything else is an error
    naming the field."""
    m = _DEFAULTDICT.match(text) if brackets == "{}" else None
    body = (m.group(1) if m else text).strip()
    if len(body) > _MAX_LITERAL or not (body.startswith(brackets[0]) and body.endswith(brackets[1])):
        wrapper = " (optionally inside defaultdict(<class 'list'>, ...))" if brackets == "{}" else ""
        raise _error(where, field, f"expected a Python {brackets[0]}...{brackets[1]} literal{wrapper}, got {text[:80]!r}")
    try:
        return ast.literal_eval(body)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        raise _error(where, field, f"not a Python literal (only strings, numbers, lists and dicts are read): "
                                   f"{text[:80]!r}") from None


def globalopinionqa(raw: dict, where: str, seed: int) -> dict:
    question = _text(raw, ("question",), where)
    name, options = _get(raw, ("options",), where)
    options = _literal(options, where, name, "[]") if isinstance(options, str) else options
    if (not isinstance(options, list) or not 2 <= len(options) <= len(LETTERS)
            or not all(isinstance(o, (str, int, float)) and not isinstance(o, bool) for o in options)):
        raise _error(where, name, f"expected a list of 2 to {len(LETTERS)} options")
    key, selections = _get(raw, ("selections",), where)
    selections = _literal(selections, where, key, "{}") if isinstance(selections, str) else selections
    if not isinstance(selections, dict) or not selections:
        raise _error(where, key, "expected a mapping of country to option probabilities")
    survey = {}
    for country, probs in selections.items():
        if not isinstance(country, str) or not isinstance(probs, list) or len(probs) != len(options) or not all(
                isinstance(p, (int, float)) and not isinstance(p, bool) and math.isfinite(p) and p >= 0
                for p in probs):
            raise _error(where, key, f"{country!r}: expected {len(options)} non-negative probabilities, one per option")
        survey[country] = [float(p) for p in probs]
    source = str(raw.get("source") or "globalopinionqa").strip()
    survey_json = json.dumps(survey, sort_keys=True)
    # the survey is part of the content: one question asked with the same options in two waves
    qid = _qid(raw, ("id",), "globalopinionqa", f"{source}\0{question}\0{options}\0{survey_json}")
    return _fields(qid, question, "", source, [str(o).strip() for o in options], survey=survey_json)


def mmlu_redux_erroneous(raw: Any, keep_all: bool, where: str = "") -> str | None:
    """MMLU-Redux rows its annotators marked as erroneous (``error_type`` other than "ok":
    wrong_groundtruth, no_correct_answer, multiple_correct_answers, bad_question_clarity, ...)
    are left out unless ``keep_all``; a row without ``error_type`` is an error naming it.
    MMLU-Redux's ``skip`` (lmad.data.benchmarks): why a row is left out, for the log, or None."""
    if not isinstance(raw, dict):
        return None
    error_type = _text(raw, ("error_type",), where).lower()
    if error_type != "ok" and not keep_all:
        return "{benchmark} rows marked erroneous (error_type other than 'ok'; keep_all: true keeps them)"
    return None
