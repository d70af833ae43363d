"""Numeric answers (GSM8K, AIME, AMC12): one number.

``1/2``, ``0.5`` and ``\\frac{1}{2}`` are one answer: the canonical form is an integer or a
reduced fraction ``p/q``. Extraction tries, in order: the last ``\\boxed{}``, the last answer
marker, GSM8K's ``#### 18``, the last number in the text.
"""

from __future__ import annotations

import re
from fractions import Fraction
from typing import Sequence

from .base import AnswerType, register
from .text import ANSWER_MARKERS, TEXT_WRAP, clean_segment, last_boxed, marker_segments, read_reply, unwrap_boxed

_INT = r"(?:\d{1,3}(?:,\d{3})+(?!\d)|\d+)"
_DEC = rf"(?:{_INT}(?:\.\d+)?|\.\d+)"
_SDEC = rf"[-+]?\s*{_DEC}"
_LATEX_FRAC = rf"([-+]?)\s*\\frac\s*(?:\{{\s*({_SDEC})\s*\}}|(\d))\s*(?:\{{\s*({_SDEC})\s*\}}|(\d))"
# a number at the start of a string: \frac{a}{b}, a/b, or a (possibly signed) decimal
_NUM_PREFIX = re.compile(rf"\s*(?:{_LATEX_FRAC}|({_SDEC})(?:\s*/\s*({_SDEC}))?)")
# every number in running text: a sign only where it cannot be a minus between operands
_NUM_ANY = re.compile(
    rf"(?:(?<![\w.)}}])[-+]\s*)?\\frac\s*(?:\{{\s*{_SDEC}\s*\}}|\d)\s*(?:\{{\s*{_SDEC}\s*\}}|\d)"
    rf"|(?:(?<![\w.)}}])[-+])?(?<![\d.]){_DEC}(?:\s*/\s*(?:[-+])?{_DEC}(?![\d.]))?"
)
# what may follow a number as its unit: words ("dollars", "m/s", "sq ft"), \text{ cm}, cm^2
_UNIT_TAIL = re.compile(
    r"(?:\s*(?:\\(?:text|mbox|textrm|textnormal|mathrm)\s*\{[^{}]*\}"
    r"|[A-Za-z/][A-Za-z.'’/-]*(?![A-Za-z.'’/-])(?:\^\{?\d+\}?|[²³])?))*\s*"
)
_NUM_NOISE = re.compile(
    r"\\\$|\$|\\[!,;: ]|~|\\(?:left|right)(?![A-Za-z])|\\%|%|\^\s*\{?\s*\\circ\s*\}?|°|[€£¥₹]|\*\*|__|`"
    r"|\\[()\[\]]"
)


def _num_clean(s: str) -> str:
    s = unwrap_boxed(s.strip())
    s = s.replace("{,}", ",").replace("−", "-").replace("\\dfrac", "\\frac").replace("\\tfrac", "\\frac")
    s = _NUM_NOISE.sub("", s)
    return s.strip().rstrip(".,;!").strip().lstrip("=").strip()


def _to_fraction(txt: str) -> Fraction:
    return Fraction(re.sub(r"[\s,]", "", txt))


def _prefix_value(m: re.Match) -> Fraction:
    sign, fnum, fnd, fden, fdd, num, den = m.groups()
    if fnum is not None or fnd is not None:
        value = _to_fraction(fnum or fnd) / _to_fraction(fden or fdd)
        return -value if sign == "-" else value
    value = _to_fraction(num)
    return value / _to_fraction(den) if den is not None else value


def parse_value(s: str, units: bool = True) -> Fraction | None:
    """The exact value of ``s`` when the whole of it is one number (after light cleaning),
    else None.  With ``units`` a unit may follow ("5 dollars", "12\\text{ cm}")."""
    try:
        s = _num_clean(s)
        m = _NUM_PREFIX.match(s)
        if not m:
            return None
        rest = s[m.end():]
        if rest.strip() and not (units and _UNIT_TAIL.fullmatch(rest)):
            return None
        return _prefix_value(m)
    except (ValueError, ZeroDivisionError, OverflowError, TypeError):
        # ValueError includes Python's int-string length limit on absurd digit strings
        return None


def render(value: Fraction) -> str | None:
    # the one canonical form of a number: an integer, else a reduced fraction p/q
    try:
        if value.denominator == 1:
            return str(value.numerator)
        return f"{value.numerator}/{value.denominator}"
    except ValueError:
        return None


def _number_in(segment: str) -> Fraction | None:
    """The number a short answer segment gives: the whole segment, else the part after its
    last ``=`` ("x = 5"), else the first number in it ("about 18 dollars a day")."""
    value = parse_value(segment)
    if value is not None:
        return value
    if "=" in segment:
        value = parse_value(segment.rsplit("=", 1)[1])
        if value is not None:
            return value
        segment = segment.rsplit("=", 1)[1]
    cleaned = _num_clean(segment)
    m = _NUM_ANY.search(cleaned)
    return parse_value(m.group(0), units=False) if m else None


def _last_number(text: str) -> Fraction | None:
    cleaned = _num_clean(text)
    last = None
    for m in _NUM_ANY.finditer(cleaned):
        last = m
    return parse_value(last.group(0), units=False) if last else None


_HASH_LINE = re.compile(r"^[ \t]*####[ \t]*(.*)$", re.MULTILINE)


def _text_answer(s: str) -> str:
    return " ".join(clean_segment(TEXT_WRAP.sub(r"\1", s)).split())


def _extract_numeric(text: str) -> tuple[str, str]:
    boxed = last_boxed(text)
    if boxed is not None and boxed.strip():
        value = _number_in(boxed)
        if value is not None and render(value) is not None:
            return render(value), "boxed"
        return _text_answer(boxed), "boxed_text"
    for seg in marker_segments(text, ANSWER_MARKERS):
        value = _number_in(seg)
        if value is not None and render(value) is not None:
            return render(value), "answer_line"
        cleaned = _text_answer(seg)
        if cleaned:
            return cleaned, "answer_line_text"
    for line in reversed(_HASH_LINE.findall(text)):
        value = _number_in(line)
        if value is not None and render(value) is not None:
            return render(value), "hash_line"
    value = _last_number(text)
    if value is not None and render(value) is not None:
        return render(value), "bare_number"
    return "", "unparsed"


def _canonical_numeric(s: str) -> str:
    value = parse_value(s)
    rendered = render(value) if value is not None else None
    return rendered if rendered is not None else " ".join(s.split())


@register
class NumericType(AnswerType):
    name = "numeric"

    def instruction(self, n_choices: int = 0) -> str:
        return 'Then finish with a last line of the form "Answer: <number>".'

    def extract(self, text, choices: Sequence[str] = (), yes_no: bool = False, n_choices: int = 0) -> tuple[str, str]:
        return read_reply(text, _extract_numeric)

    def canonical(self, answer) -> str:
        return _canonical_numeric(answer) if isinstance(answer, str) else ""

    def mentions(self, text: str, gold: str, choices: Sequence[str] = ()) -> bool:
        """A number in the text has the gold's value."""
        value = parse_value(gold)
        return value is not None and value in numbers_in(text or "")


def numbers_in(text: str) -> set[Fraction]:
    """The value of every number in running text."""
    out = set()
    for m in _NUM_ANY.finditer(_num_clean(text)):
        value = parse_value(m.group(0), units=False)
        if value is not None:
            out.add(value)
    return out
