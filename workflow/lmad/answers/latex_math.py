"""Math answers (MATH500, OlympiadBench): a LaTeX expression.

Canonical form: a light LaTeX normalization (see :func:`canonical_math`), and the numeric form
when the whole is a number. Two answers are one when their canonical strings are equal, else
when ``math-verify`` finds them symbolically equal under a time limit.
"""

from __future__ import annotations

import functools
import re
import threading
from typing import Sequence

from .base import AnswerType, register
from .numeric import parse_value, render
from .text import ANSWER_MARKERS, SEG_MAX, SEG_STRIP, first_sentence, last_boxed, line_after, markers_in, read_reply, unwrap_boxed

_MATH_DROP = re.compile(
    r"\\\$|\$|\\[()\[\]]|\\(?:left|right)(?![A-Za-z])|\\displaystyle|\\[!,;: ]|\\q?quad(?![A-Za-z])|~"
    r"|\^\s*\{\s*\\circ\s*\}|\^\s*\\circ(?![A-Za-z])|°|\\%|%"
)
_TRAILING_TEXT = re.compile(r"^(?P<body>.*\S)\s*\\(?:text|mbox|textrm|textnormal)\s*\{[^{}]*\}\s*$", re.DOTALL)
_ONLY_TEXT = re.compile(r"^\\(?:text|mbox|textrm|textnormal|textbf|mathrm|mathbf)\s*\{([^{}]*)\}$")
_ASSIGNMENT = re.compile(r"^(?:[A-Za-z]|\\[A-Za-z]+)(?:_\{?[A-Za-z0-9]+\}?)?=(?P<rest>.+)$", re.DOTALL)
_RELATION = re.compile(r"[=<>≤≥≠]|\\(?:le|ge|leq|geq|ne|neq|lt|gt|approx)(?![A-Za-z])")


def _math_norm_once(s: str) -> str:
    s = unwrap_boxed(s.strip().strip("*_`\"'“”‘’").strip())
    s = s.replace("\\dfrac", "\\frac").replace("\\tfrac", "\\frac").replace("−", "-")
    s = _MATH_DROP.sub("", s)
    m = _TRAILING_TEXT.match(s)
    if m:  # a unit at the end: 5\text{ cm}
        s = m.group("body")
    m = _ONLY_TEXT.match(s.strip())
    if m:
        s = m.group(1)
    # spaces go, except the one that keeps "\pi r" from becoming the command "\pir"
    s = re.sub(r"(\\[A-Za-z]+)\s+(?=[A-Za-z])", "\\1\x00", s.replace("\x00", ""))
    s = re.sub(r"\s+", "", s).replace("\x00", " ")
    s = s.rstrip(".")
    s = re.sub(r"\\frac(\d)(\d)", r"\\frac{\1}{\2}", s)
    s = re.sub(r"\\frac(\d)\{", r"\\frac{\1}{", s)
    s = re.sub(r"\\frac\{([^{}]*)\}(\d)", r"\\frac{\1}{\2}", s)
    s = re.sub(r"\\sqrt(\d)", r"\\sqrt{\1}", s)
    m = _ASSIGNMENT.match(s)
    if m and not _RELATION.search(m.group("rest")):
        s = m.group("rest")
    return s


@functools.lru_cache(maxsize=1 << 16)  # golds and agents' answers are normalized again and again
def canonical_math(s: str) -> str:
    for _ in range(12):  # to a fixed point, so that canonical() is idempotent
        t = _math_norm_once(s)
        if t == s:
            break
        s = t
    value = parse_value(s, units=False)
    rendered = render(value) if value is not None else None
    return rendered if rendered is not None else s


_MATH_SPANS = re.compile(
    r"(?<!\\)\$\$(?P<dd>.+?)(?<!\\)\$\$"                   # $$ … $$
    r"|(?<![\\$])\$(?!\$)(?P<d>[^$\n]+?)(?<!\\)\$"            # $ … $ (one line)
    r"|\\\[(?P<br>(?:(?!\\\[).)+?)\\\]"                     # \[ … \]
    r"|\\\((?P<pa>(?:(?!\\\().)+?)\\\)",                    # \( … \)
    re.DOTALL,
)


def _math_span(m: re.Match) -> str:
    return next(g for g in m.groups() if g is not None)


def _extract_math(text: str) -> tuple[str, str]:
    boxed = last_boxed(text)
    if boxed is not None and canonical_math(boxed):
        return canonical_math(boxed), "boxed"
    for mk in markers_in(text, ANSWER_MARKERS):
        lead = text[mk.end(): mk.end() + 4 * SEG_MAX].lstrip(SEG_STRIP)
        span = _MATH_SPANS.match(lead)  # "Answer: $$\n x^2 \n$$" may span lines
        if span is None:
            first = line_after(text, mk.end())
            span = _MATH_SPANS.search(first)
            candidate = _math_span(span) if span else first_sentence(first.strip(SEG_STRIP))
        else:
            candidate = _math_span(span)
        if canonical_math(candidate):
            return canonical_math(candidate), "answer_line"
    last = None
    for last in _MATH_SPANS.finditer(text):
        pass
    if last is not None and canonical_math(_math_span(last)):
        return canonical_math(_math_span(last)), "last_math"
    lines = [ln for ln in text.splitlines() if ln.strip(SEG_STRIP)]
    if lines and canonical_math(lines[-1].strip(SEG_STRIP)):
        return canonical_math(lines[-1].strip(SEG_STRIP)), "last_line"
    return "", "empty"


# math-verify: symbolic equivalence of two canonical strings under a time limit
_MV_TIMEOUT_S = 2          # per parse and per comparison (math-verify takes whole seconds)
_MV_MAX_CHARS = 300        # longer strings are no final answers; not worth a sympy run
# power towers and huge exponents/factorials: sympy would evaluate them exactly, for ever
_MV_COSTLY = re.compile(r"\^\s*\{[^{}]*\^|\^\s*\{?\s*\d{3,}|\d{3,}\s*!")


def _mv_compare(a: str, b: str, limit: int | None) -> bool:
    try:
        from math_verify import parse, verify
        from math_verify.errors import TimeoutException
    except ImportError:  # no math-verify: canonical equality only
        return False
    try:
        pa = parse(f"${a}$", parsing_timeout=limit)
        pb = parse(f"${b}$", parsing_timeout=limit)
        if not pa or not pb:
            return False
        # verify() is not symmetric (gold first); either direction counts, so equivalent() is symmetric
        return bool(verify(pa, pb, timeout_seconds=limit) or verify(pb, pa, timeout_seconds=limit))
    except (Exception, TimeoutException):
        return False


def _math_verify_equal(a: str, b: str) -> bool:
    """math-verify's verdict, never raising, bounded in time.

    math-verify times out with ``signal.alarm``, which works in the main thread only (elsewhere
    it raises).  In the main thread its own timeouts are used.  In any other thread its
    timeouts are switched off (``None``) and the comparison runs in a daemon helper thread
    that the caller waits for at most ``4 * _MV_TIMEOUT_S`` seconds: a comparison still
    running then counts as not equivalent and is abandoned (it may keep one core busy until
    sympy finishes; inputs that look costly are refused up front for that reason).
    """
    if len(a) > _MV_MAX_CHARS or len(b) > _MV_MAX_CHARS:
        return False
    if threading.current_thread() is threading.main_thread():
        return _mv_compare(a, b, _MV_TIMEOUT_S)
    if _MV_COSTLY.search(a) or _MV_COSTLY.search(b):
        return False
    box: list[bool] = []
    helper = threading.Thread(target=lambda: box.append(_mv_compare(a, b, None)), daemon=True)
    helper.start()
    helper.join(4 * _MV_TIMEOUT_S)
    return bool(box and box[0])


@register
class MathType(AnswerType):
    name = "math"

    def instruction(self, n_choices: int = 0) -> str:
        return 'Then finish with a last line of the form "Answer: <final expression in LaTeX>".'

    def extract(self, text, choices: Sequence[str] = (), yes_no: bool = False, n_choices: int = 0) -> tuple[str, str]:
        return read_reply(text, _extract_math)

    def canonical(self, answer) -> str:
        return canonical_math(answer) if isinstance(answer, str) else ""

    def equivalent_keys(self, a: str, b: str) -> bool:
        if not a or not b:
            return False
        return a == b or _verified(min(a, b), max(a, b))

    def mentions(self, text: str, gold: str, choices: Sequence[str] = ()) -> bool:
        """A math span of the text (``$…$``, ``\\boxed{}``…) is the gold's expression."""
        key = canonical_math(gold or "")
        spans = [_math_span(m) for m in _MATH_SPANS.finditer(text or "")]
        boxed = last_boxed(text or "")
        return bool(key) and any(self.equivalent_keys(canonical_math(s), key) for s in [*spans, *([boxed] if boxed else [])])


@functools.lru_cache(maxsize=1 << 16)  # voting compares the same pairs across agents and rounds
def _verified(a: str, b: str) -> bool:
    return _math_verify_equal(a, b)
