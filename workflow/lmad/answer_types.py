"""Answer types beyond multi-hop QA: extraction, canonical form, equivalence, scoring, voting.

One module for every task family the pipeline runs:

``span``, ``yes_no``
    Multi-hop QA (HotpotQA, 2Wiki, MuSiQue, StrategyQA); everything is delegated to
    :mod:`lmad.answers`, whose behaviour is unchanged.
``numeric``
    GSM8K, AIME, AMC12: a number; ``1/2``, ``0.5`` and ``\\frac{1}{2}`` are one answer.
``math``
    MATH500, OlympiadBench: a LaTeX expression; canonical string equality, else
    ``math-verify`` (symbolic equivalence) under a time limit.
``choice``
    GPQA, MMLU, MMLU-Redux, TruthfulQA: the letter of one option.
``opinion``
    GlobalOpinionQA: the letter of one option, no gold; scored by distribution
    similarity to the surveyed countries (:func:`opinion_similarity`).

As in :mod:`lmad.answers`, model output is untrusted text: it is parsed with regular
expressions and never evaluated, no function raises on model text (unknown *answer types*
are programming errors and raise ``ValueError``), and :func:`extract` reports which form
matched so that fallbacks can be counted downstream.
"""

from __future__ import annotations

import functools
import math
import re
import threading
from collections.abc import Sequence as SequenceABC
from dataclasses import dataclass
from fractions import Fraction
from typing import Callable, Iterable, Mapping, Sequence

from lmad import answers as _answers
from lmad.answers import THINK_REMOVED, normalize_hotpot, strip_think

__all__ = [
    "ANSWER_TYPES",
    "ANSWER_LINES",
    "extract",
    "canonical",
    "equivalent",
    "is_correct",
    "majority_vote",
    "all_agree",
    "group_keys",
    "same_answer",
    "type_of",
    "key_of",
    "Gold",
    "gold_of",
    "golds_of",
    "as_gold",
    "gold_correct",
    "jensen_shannon",
    "answer_distribution",
    "opinion_similarity",
    "answer_instruction",
]

ANSWER_TYPES = ("span", "yes_no", "numeric", "math", "choice", "opinion")
#: the free-form types: read by the multi-hop rules, scored by official EM/F1 and the LLM judge
FREE_FORM = ("span", "yes_no")

#: The answer-format lines of the multi-hop QA prompts (the source of truth; solver.py's
#: ``ANSWER_LINES`` holds the same text under the same keys).
ANSWER_LINES = {
    "yes/no": 'Then finish with a last line of the form "Answer: yes" or "Answer: no".',
    "short": 'Then finish with a last line of the form "Answer: <short answer>".',
}

_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _check_type(answer_type: str) -> str:
    if answer_type not in ANSWER_TYPES:
        raise ValueError(f"unknown answer type {answer_type!r}; expected one of {', '.join(ANSWER_TYPES)}")
    return answer_type


def _n_letters(n_choices) -> int:
    # 0 (or nonsense) means the common four options; more than 26 cannot be lettered
    try:
        n = int(n_choices)
    except (TypeError, ValueError, OverflowError):
        return 4
    return 4 if n <= 0 else min(n, 26)


# --------------------------------------------------------------------------
# shared pieces: \boxed{...}, answer markers
# --------------------------------------------------------------------------

_BOXED_START = re.compile(r"\\(?:boxed|fbox)\s*\{")


def _brace_pairs(text: str) -> dict[int, int]:
    """Index of each grouping ``{`` → index just past its matching ``}``, in one pass (so a
    reply of thousands of unclosed ``\\boxed{`` stays linear).  ``\\{`` and ``\\}`` are literal
    braces (sets), not grouping."""
    pairs: dict[int, int] = {}
    stack: list[int] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if c == "{":
            stack.append(i)
        elif c == "}" and stack:
            pairs[stack.pop()] = i + 1
        i += 1
    return pairs


def _last_boxed(text: str) -> str | None:
    """Content of the last complete ``\\boxed{…}`` (balanced, so ``\\boxed{\\frac{1}{2}}`` works)."""
    starts = list(_BOXED_START.finditer(text))
    if not starts:
        return None
    pairs = _brace_pairs(text)
    for m in reversed(starts):
        end = pairs.get(m.end() - 1)
        if end is not None:
            return text[m.end(): end - 1]
    return None


def _unwrap_boxed(s: str) -> str:
    m = _BOXED_START.match(s)
    if m and _brace_pairs(s).get(m.end() - 1) == len(s):
        return s[m.end(): -1]
    return s


# answers.py's markers ("Answer:", "**Final Answer:**", "the answer is", possessives excluded)
_ANSWER_MARKERS = (_answers.MARKER_COLON, _answers.MARKER_IS)
_BOLD = r"(?:\*\*|__)"
_POSSESSIVE = r"(?<![\w'’])(?<!'s\s)(?<!’s\s)(?<!s'\s)(?<!s’\s)"
# multiple choice adds "option"/"choice": "Correct option: B", "the best choice is (C)"
_CHOICE_COLON = re.compile(
    rf"{_POSSESSIVE}(?:(?:final|short|correct|best|right)\s+)?(?:answer|option|choice)\s*{_BOLD}?\s*[:：]",
    re.IGNORECASE,
)
_CHOICE_IS = re.compile(
    r"\b(?:the|my|our)\s+(?:(?:final|correct|short|best|right)\s+)*(?:answer|option|choice)"
    r"(?:\s+to\s+(?:the|this)\s+question)?\s*"
    rf"{_BOLD}?\s*(?:is|would\s+be|remains)\b\s*{_BOLD}?\s*:?",
    re.IGNORECASE,
)
_CHOICE_MARKERS = (_CHOICE_COLON, _CHOICE_IS)
_SEG_STRIP = " \t\r\n*_`\"'“”‘’:>#"
_SEG_MAX = 600  # an answer opens its segment; the cap keeps thousands of markers on one line linear


def _line_after(text: str, pos: int) -> str:
    """The rest of the line from ``pos``, or the next non-empty line when that is blank
    ("**Final Answer:**" then a newline); at most ``_SEG_MAX`` characters."""
    n = len(text)
    while pos <= n:
        end = text.find("\n", pos)
        end = n if end < 0 else end
        line = text[pos: min(end, pos + _SEG_MAX)]
        if line.strip(_SEG_STRIP) or end >= n:
            return line
        pos = end + 1
    return ""


def _markers(text: str, markers) -> list[re.Match]:
    """Every answer marker in ``text``, last first."""
    return sorted((m for pat in markers for m in pat.finditer(text)), key=lambda m: m.start(), reverse=True)


def _marker_segments(text: str, markers) -> list[str]:
    """What follows each answer marker, last marker first (see :func:`_line_after`)."""
    return [_line_after(text, m.end()) for m in _markers(text, markers)]


# --------------------------------------------------------------------------
# numbers
# --------------------------------------------------------------------------

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
    s = _unwrap_boxed(s.strip())
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


def _parse_value(s: str, units: bool = True) -> Fraction | None:
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


def _render(value: Fraction) -> str | None:
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
    value = _parse_value(segment)
    if value is not None:
        return value
    if "=" in segment:
        value = _parse_value(segment.rsplit("=", 1)[1])
        if value is not None:
            return value
        segment = segment.rsplit("=", 1)[1]
    cleaned = _num_clean(segment)
    m = _NUM_ANY.search(cleaned)
    return _parse_value(m.group(0), units=False) if m else None


def _last_number(text: str) -> Fraction | None:
    cleaned = _num_clean(text)
    last = None
    for m in _NUM_ANY.finditer(cleaned):
        last = m
    return _parse_value(last.group(0), units=False) if last else None


_HASH_LINE = re.compile(r"^[ \t]*####[ \t]*(.*)$", re.MULTILINE)


def _text_answer(s: str) -> str:
    return " ".join(_answers.clean_segment(_TEXT_WRAP.sub(r"\1", s)).split())


def _extract_numeric(text: str) -> tuple[str, str]:
    boxed = _last_boxed(text)
    if boxed is not None and boxed.strip():
        value = _number_in(boxed)
        if value is not None and _render(value) is not None:
            return _render(value), "boxed"
        return _text_answer(boxed), "boxed_text"
    for seg in _marker_segments(text, _ANSWER_MARKERS):
        value = _number_in(seg)
        if value is not None and _render(value) is not None:
            return _render(value), "answer_line"
        cleaned = _text_answer(seg)
        if cleaned:
            return cleaned, "answer_line_text"
    for line in reversed(_HASH_LINE.findall(text)):
        value = _number_in(line)
        if value is not None and _render(value) is not None:
            return _render(value), "hash_line"
    value = _last_number(text)
    if value is not None and _render(value) is not None:
        return _render(value), "bare_number"
    return "", "unparsed"


def _canonical_numeric(s: str) -> str:
    value = _parse_value(s)
    rendered = _render(value) if value is not None else None
    return rendered if rendered is not None else " ".join(s.split())


# --------------------------------------------------------------------------
# math (LaTeX)
# --------------------------------------------------------------------------

_MATH_DROP = re.compile(
    r"\\\$|\$|\\[()\[\]]|\\(?:left|right)(?![A-Za-z])|\\displaystyle|\\[!,;: ]|\\q?quad(?![A-Za-z])|~"
    r"|\^\s*\{\s*\\circ\s*\}|\^\s*\\circ(?![A-Za-z])|°|\\%|%"
)
_TRAILING_TEXT = re.compile(r"^(?P<body>.*\S)\s*\\(?:text|mbox|textrm|textnormal)\s*\{[^{}]*\}\s*$", re.DOTALL)
_ONLY_TEXT = re.compile(r"^\\(?:text|mbox|textrm|textnormal|textbf|mathrm|mathbf)\s*\{([^{}]*)\}$")
_ASSIGNMENT = re.compile(r"^(?:[A-Za-z]|\\[A-Za-z]+)(?:_\{?[A-Za-z0-9]+\}?)?=(?P<rest>.+)$", re.DOTALL)
_RELATION = re.compile(r"[=<>≤≥≠]|\\(?:le|ge|leq|geq|ne|neq|lt|gt|approx)(?![A-Za-z])")


def _math_norm_once(s: str) -> str:
    s = _unwrap_boxed(s.strip().strip("*_`\"'“”‘’").strip())
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
def _canonical_math(s: str) -> str:
    for _ in range(12):  # to a fixed point, so that canonical() is idempotent
        t = _math_norm_once(s)
        if t == s:
            break
        s = t
    value = _parse_value(s, units=False)
    rendered = _render(value) if value is not None else None
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
    boxed = _last_boxed(text)
    if boxed is not None and _canonical_math(boxed):
        return _canonical_math(boxed), "boxed"
    for mk in _markers(text, _ANSWER_MARKERS):
        lead = text[mk.end(): mk.end() + 4 * _SEG_MAX].lstrip(_SEG_STRIP)
        span = _MATH_SPANS.match(lead)  # "Answer: $$\n x^2 \n$$" may span lines
        if span is None:
            first = _line_after(text, mk.end())
            span = _MATH_SPANS.search(first)
            candidate = _math_span(span) if span else _answers.first_sentence(first.strip(_SEG_STRIP))
        else:
            candidate = _math_span(span)
        if _canonical_math(candidate):
            return _canonical_math(candidate), "answer_line"
    last = None
    for last in _MATH_SPANS.finditer(text):
        pass
    if last is not None and _canonical_math(_math_span(last)):
        return _canonical_math(_math_span(last)), "last_math"
    lines = [ln for ln in text.splitlines() if ln.strip(_SEG_STRIP)]
    if lines and _canonical_math(lines[-1].strip(_SEG_STRIP)):
        return _canonical_math(lines[-1].strip(_SEG_STRIP)), "last_line"
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


# --------------------------------------------------------------------------
# multiple choice (and opinion options)
# --------------------------------------------------------------------------

_LEAD = r"[\s*_`\"'“”‘’]*"
_TEXT_WRAP = re.compile(r"\\(?:text|textbf|mathrm|mathbf|mbox)\s*\{([^{}]*)\}")
_LETTER_AT = re.compile(r"\((?P<p>[A-Za-z])\)|\[(?P<b>[A-Za-z])\]|(?P<l>[A-Za-z])(?![A-Za-z0-9'’])")
_AFTER_PUNCT = re.compile(r"\s*(?:$|[.):,;*_\"'”’\]}\-–—])")
_AFTER_WORD = re.compile(r"\s+(?P<w>[A-Za-z]+)")
_LIST_SEP = re.compile(r"[\s.)]*(?:,|/|&|\band/or\b|\bor\b|\band\b)\s*", re.IGNORECASE)
_WHOLE_LETTER = re.compile(r"^[\s*_`\"'“”‘’(\[]*(?P<x>[A-Za-z])[\s*_`\"'“”‘’)\].:]*$")
_LETTER_LINE = re.compile(
    r"^[\s*_`>#\"'“”‘’]*(?:\((?P<p>[A-Z])\)|\[(?P<b>[A-Z])\]|(?P<l>[A-Z])[.):]?)[\s*_`\"'“”‘’.]*$"
)
_LETTER_LEAD = re.compile(r"^[\s*_`>#\"'“”‘’]*(?:\((?P<p>[A-Z])\)|(?P<l>[A-Z])[):])\s+(?P<rest>\S.*)$")
_INLINE_LETTER = re.compile(r"(?<![\w'’\\])\(?(?P<x>[A-Z])\)?(?![\w'’])")


def _letter_at(s: str, pos: int, letters: str, lowercase: bool) -> tuple[str, int] | None:
    """The option letter written at ``s[pos:]`` ("B", "(B)", "B)", "B.", "[B]") and where it ends.

    A bare letter followed by a word is a letter only when upper case and neither "A" nor
    "I" before a lower-case word: "A rise in pressure" opens with the article."""
    m = _LETTER_AT.match(s, pos)
    if not m:
        return None
    letter = m.group("p") or m.group("b") or m.group("l")
    if letter.islower() and not lowercase:
        return None
    if letter.upper() not in letters:
        return None
    if m.group("l"):
        if not _AFTER_PUNCT.match(s, m.end()):
            w = _AFTER_WORD.match(s, m.end())
            if letter.islower():
                if not (w and w.group("w").lower() in ("or", "and")):
                    return None
            elif w and letter in "AI" and w.group("w")[0].islower() and w.group("w").lower() not in (
                    "or", "and", "is", "because", "since", "as"):
                return None
    return letter.upper(), m.end()


def _choice_clean(seg: str) -> str:
    return _TEXT_WRAP.sub(r"\1", seg).replace("$", "")


def _parse_choice(seg: str, letters: str, options: tuple[str, ...]) -> tuple[str, str] | None:
    """(letter, method) from what follows a marker or fills a box, where lower case counts;
    None when it names no option."""
    seg = _choice_clean(seg)
    whole = _WHOLE_LETTER.match(seg)
    if whole and whole.group("x").upper() in letters:
        return whole.group("x").upper(), "letter"
    if options:
        first = _answers.first_sentence(seg.strip(_SEG_STRIP))
        for cand in (seg, first):
            norm = normalize_hotpot(cand.strip(_SEG_STRIP))
            hits = {_LETTERS[i] for i, o in enumerate(options) if norm and normalize_hotpot(o) == norm}
            if len(hits) == 1:
                return hits.pop(), "option_text"
    start = re.match(_LEAD, seg).end()
    got = _letter_at(seg, start, letters, True)
    if got:
        found, pos = {got[0]}, got[1]
        while True:  # "A or C", "(A), (C)", "B/D": several letters
            sep = _LIST_SEP.match(seg, pos)
            nxt = _letter_at(seg, sep.end(), letters, True) if sep else None
            if not nxt:
                break
            found.add(nxt[0])
            pos = nxt[1]
        return (found.pop(), "letter") if len(found) == 1 else ("", "ambiguous")
    sentence = _answers.first_sentence(seg.strip(_SEG_STRIP))
    inline = set()
    for m in _INLINE_LETTER.finditer(sentence):
        x = m.group("x")
        if x in letters and _letter_at(sentence, m.start(), letters, False):
            inline.add(x)
    if len(inline) == 1:
        return inline.pop(), "letter"
    if len(inline) > 1:
        return "", "ambiguous"
    return None


def _extract_choice(text: str, n_choices, choices) -> tuple[str, str]:
    letters = _LETTERS[: _n_letters(n_choices)]
    options = tuple(str(c) for c in choices)[: len(letters)] if choices else ()
    boxed = _last_boxed(text)
    if boxed is not None and boxed.strip():
        got = _parse_choice(boxed, letters, options)
        if got:
            letter, how = got
            return letter, ("boxed" if how == "letter" else how)
    for seg in _marker_segments(text, _CHOICE_MARKERS):
        got = _parse_choice(seg, letters, options)
        if got:
            letter, how = got
            return letter, ("answer_line" if how == "letter" else how)
    for line in reversed(text.splitlines()):
        m = _LETTER_LINE.match(line)
        if m:
            x = m.group("p") or m.group("b") or m.group("l")
            if x in letters:
                return x, "letter_line"
    for line in text.splitlines():  # "D) The brain", "(B) Eight": an option written out as listed
        got = _letter_lead(line, letters, options)
        if got:
            return got
    return "", "unparsed"


def _letter_lead(line: str, letters: str, options: tuple[str, ...]) -> tuple[str, str] | None:
    """A line that opens with an option letter in the list's own form (``D)``, ``(D)``, ``D:``)
    and the option's text. When the text is another option's ("A: The lungs" where the lungs
    are C) the reply names two options and gives no answer."""
    m = _LETTER_LEAD.match(line)
    letter = m and (m.group("p") or m.group("l"))
    if not letter or letter not in letters:
        return None
    rest = normalize_hotpot(_answers.first_sentence(m.group("rest").strip(_SEG_STRIP)).strip(_SEG_STRIP))
    named = {_LETTERS[i] for i, o in enumerate(options) if rest and normalize_hotpot(o) == rest}
    if named and named != {letter}:
        return "", "ambiguous"
    return letter, "letter_lead"


def _canonical_choice(s: str) -> str:
    m = _WHOLE_LETTER.match(_choice_clean(s))
    return m.group("x").upper() if m else " ".join(s.split())


# --------------------------------------------------------------------------
# the API
# --------------------------------------------------------------------------

def extract(text, answer_type: str, n_choices: int = 0, choices: Sequence[str] = ()) -> tuple[str, str]:
    """The answer in ``text`` as a canonical string, and the form that matched.

    Thinking blocks are removed first (:func:`lmad.answers.strip_think`; method suffix
    ``+think_removed``).  Forms are tried in order; the method names the first that gave
    an answer:

    ``span``, ``yes_no``
        :func:`lmad.answers.extract_answer` (``answer_line``, ``final_sentence``, ``empty``;
        the answer as written, not normalized).
    ``numeric``
        ``boxed`` (last balanced ``\\boxed{…}``; ``boxed_text`` when it holds no number),
        ``answer_line`` (the last answer marker of :mod:`lmad.answers`: "Answer: 18",
        "The answer is $1,000."; ``answer_line_text`` when its content is no number:
        the cleaned text is kept), ``hash_line`` (GSM8K's ``#### 18``), ``bare_number``
        (the last number in the text), else ``unparsed``.  Canonical: an integer ``-3``,
        or a reduced fraction ``p/q`` (``0.5``, ``.5``, ``1/2``, ``\\frac12`` → ``1/2``).
    ``math``
        ``boxed``, ``answer_line`` (its first ``$…$`` or else its first sentence),
        ``last_math`` (the last ``$…$``/``$$…$$``/``\\(…\\)``/``\\[…\\]``), ``last_line``.
        Canonical: see :func:`canonical`.
    ``choice``, ``opinion``
        Letters A.. up to ``n_choices`` (4 when 0).  ``boxed`` (``\\boxed{B}``),
        ``answer_line`` ("Answer: (B)", "**Answer:** B.", "the correct option is B"; lower
        case accepted here), ``option_text`` (a marker followed by the exact text of one of
        ``choices``), ``letter_line`` (a line that is just "B", "(B)", "B)" or "B."; upper
        case only, a lone "a" is the article), ``ambiguous`` (several different letters in
        the deciding marker or box, answer ``""``), else ``unparsed``.

    Empty (or non-str) text gives ``("", "empty")``.  Never raises on the text.
    """
    _check_type(answer_type)
    if answer_type in FREE_FORM:
        return _answers.extract_answer(text, yes_no=answer_type == "yes_no")
    if not isinstance(text, str):
        return "", "empty"
    try:
        key = tuple(str(c) for c in choices) if choices and not isinstance(choices, str) else ()
    except TypeError:
        key = ()
    return _extract_of(text, answer_type, _n_letters(n_choices), key)


@functools.lru_cache(maxsize=1 << 14)  # agents and rounds repeat replies: each parsed once per job
def _extract_of(text: str, answer_type: str, n: int, choices: tuple[str, ...]) -> tuple[str, str]:
    body, removed = strip_think(text)
    if not body.strip(_SEG_STRIP + ".,;!?-"):
        answer, method = "", "empty"
    elif answer_type == "numeric":
        answer, method = _extract_numeric(body)
    elif answer_type == "math":
        answer, method = _extract_math(body)
    else:
        answer, method = _extract_choice(body, n, choices)
    return answer, method + THINK_REMOVED if removed else method


def canonical(answer, answer_type: str) -> str:
    """The grouping key of an extracted answer (idempotent).

    span/yes_no: :func:`lmad.answers.normalize_answer`.  numeric: an integer or ``p/q`` when
    the answer is one number (units, ``$``, ``%``, thousands commas and a trailing period
    dropped), else the whitespace-collapsed text.  math: a light LaTeX normalization (``$``,
    ``\\left``/``\\right``, thin spaces, spaces, ``^\\circ``, ``\\%``, a trailing ``\\text{…}``
    unit and period dropped; ``\\dfrac``/``\\tfrac`` → ``\\frac``; ``\\frac12`` →
    ``\\frac{1}{2}``; a leading ``x=`` dropped when the rest is no relation), and the numeric
    form when the whole is a number.  choice/opinion: the upper-case letter ("(b)" → "B"),
    else the whitespace-collapsed text.
    """
    _check_type(answer_type)
    if not isinstance(answer, str):
        return ""
    if answer_type in FREE_FORM:
        return _answers.normalize_answer(answer)
    if answer_type == "numeric":
        return _canonical_numeric(answer)
    if answer_type == "math":
        return _canonical_math(answer)
    return _canonical_choice(answer)


@functools.lru_cache(maxsize=1 << 16)  # voting compares the same pairs across agents and rounds
def _equiv_canon(a: str, b: str, answer_type: str) -> bool:
    # a <= b: callers order the pair, so (a, b) and (b, a) share one entry
    if not a or not b:
        return False
    if a == b:
        return True
    return answer_type == "math" and _math_verify_equal(a, b)


def _equiv(a: str, b: str, answer_type: str) -> bool:
    return _equiv_canon(min(a, b), max(a, b), answer_type)


def equivalent(a, b, answer_type: str) -> bool:
    """Whether two answers are the same answer of this type (symmetric; empty answers are
    equivalent to nothing).  span/yes_no: equal normalization; numeric: equal value;
    choice/opinion: same letter; math: equal canonical strings, else math-verify's symbolic
    verdict (either direction; at most ~2 s per step; any error or timeout: not equivalent)."""
    return _equiv(canonical(a, answer_type), canonical(b, answer_type), answer_type)


def _gold_list(golds) -> list:
    if isinstance(golds, str):
        return [golds]
    try:
        return [g for g in golds if g is not None]
    except TypeError:
        return []


def is_correct(pred, golds, answer_type: str, rules: str = "hotpotqa") -> bool | None:
    """Whether ``pred`` (an extracted answer) is right.

    span/yes_no: the official exact match (:func:`lmad.answers.exact_match` with ``rules``)
    is positive; numeric/math/choice: equivalent to any gold; opinion: None (no gold)."""
    _check_type(answer_type)
    if answer_type == "opinion":
        return None
    gs = [g for g in _gold_list(golds) if isinstance(g, str)]
    if answer_type in FREE_FORM:
        return bool(gs) and _answers.exact_match(pred if isinstance(pred, str) else "", gs, rules) > 0
    return any(equivalent(pred, g, answer_type) for g in gs)


def majority_vote(
    answers: Sequence[str],
    answer_type: str = "span",
    order_key: Sequence | Callable[[int], object] | None = None,
) -> tuple[str, dict]:
    """:func:`lmad.answers.majority_vote` (same tie rule, return value and ``info``), grouping
    by the type's :func:`equivalent`: in agent order each answer joins the first earlier group
    whose representative (first member) it is equivalent to, else opens a group keyed by its
    :func:`canonical` form.  ``1/2`` and ``0.5`` vote together, so do ``(B)`` and ``B``.  For
    span/yes_no this is exactly :func:`lmad.answers.majority_vote`."""
    _check_type(answer_type)
    order = _answers.agent_order(len(answers), order_key)
    return _answers.tally(answers, order, _groups(answers, answer_type, order))


def _groups(answers: Sequence[str], answer_type: str, order: Sequence[int]) -> list[str]:
    # in ``order`` each answer joins the first group whose representative it is equivalent to
    norms = [canonical(a or "", answer_type) for a in answers]
    group = [""] * len(answers)
    reps: list[str] = []
    for i in order:
        if norms[i]:
            group[i] = next((r for r in reps if _equiv(r, norms[i], answer_type)), "")
            if not group[i]:
                group[i] = norms[i]
                reps.append(norms[i])
    return group


def group_keys(answers: Sequence[str], answer_type: str = "span") -> list[str]:
    """Each answer's vote group, as :func:`majority_vote` forms them with agents in index order:
    the canonical form of the group's first member ("" for an empty answer). For span/yes_no
    this is each answer's :func:`lmad.answers.normalize_answer`."""
    _check_type(answer_type)
    return _groups(answers, answer_type, range(len(answers)))


def all_agree(answers: Sequence[str], answer_type: str = "span") -> bool:
    """True iff there is at least one answer and all are non-empty and equivalent to the first
    (:func:`lmad.answers.all_agree` for span/yes_no)."""
    _check_type(answer_type)
    norms = [canonical(a or "", answer_type) for a in answers]
    return bool(norms) and all(norms) and all(_equiv(norms[0], c, answer_type) for c in norms[1:])


def same_answer(a, b, answer_type: str = "span") -> bool:
    """Whether two answers say the same: equal canonical forms (two empty answers included,
    unlike :func:`equivalent`), else equivalent. For span/yes_no: equal normalization."""
    ca, cb = canonical(a or "", answer_type), canonical(b or "", answer_type)
    return ca == cb or _equiv(ca, cb, answer_type)


# --------------------------------------------------------------------------
# a question's gold, as the analyses compare answers with it
# --------------------------------------------------------------------------

def type_of(question: Mapping) -> str:
    """A ``questions`` row's answer type; span where the row names none (multi-hop tables)."""
    return question.get("answer_type") or "span"


def key_of(answer, question: Mapping) -> str:
    """The grouping key of an answer to this question (:func:`canonical` of its type)."""
    return canonical(answer or "", type_of(question))


@dataclass(frozen=True)
class Gold(SequenceABC):
    """A question's gold answers (answer, then aliases) with what comparing an answer with them
    needs: the answer type and, for span/yes_no, the benchmark's official scoring rules.

    A sequence of the gold strings, so code that reads only the strings (a gold named in a
    repair's words, ``exact_match``) takes it as the plain list it stands for."""

    answers: tuple[str, ...] = ()
    answer_type: str = "span"
    rules: str = "hotpotqa"

    def __post_init__(self):
        _check_type(self.answer_type)

    def __getitem__(self, i):
        return self.answers[i]

    def __len__(self) -> int:
        return len(self.answers)


def _rules_of(benchmark) -> str:
    # EM is the same under every official rule set; an unknown benchmark keeps the default
    try:
        return _answers.scoring_rules(benchmark or "")
    except ValueError:
        return "hotpotqa"


def gold_of(question: Mapping) -> Gold:
    """The :class:`Gold` of a ``questions`` row (answer, aliases, answer_type, benchmark)."""
    kind = type_of(question)
    answers = tuple(g for g in _gold_list([question.get("answer"), *(question.get("aliases") or [])])
                    if isinstance(g, str))
    return Gold(answers, kind, _rules_of(question.get("benchmark")) if kind in FREE_FORM else "hotpotqa")


def golds_of(questions: Iterable[Mapping]) -> dict[tuple[str, str], Gold]:
    """{(dataset, qid): Gold} of ``questions`` rows."""
    return {(q["dataset"], q["qid"]): gold_of(q) for q in questions}


def as_gold(golds) -> Gold:
    """A :class:`Gold` as is; a gold string or list of them as span golds (official EM)."""
    if isinstance(golds, Gold):
        return golds
    return Gold(tuple(g for g in _gold_list(golds) if isinstance(g, str)))


def gold_correct(answer, golds) -> bool:
    """Whether an answer is right by its question's own rule (:func:`is_correct` with the gold's
    type and rules); ``golds`` a :class:`Gold`, or gold strings (spans). No gold (opinions): False."""
    g = as_gold(golds)
    return bool(is_correct(answer if isinstance(answer, str) else "", g.answers, g.answer_type, g.rules))


# --------------------------------------------------------------------------
# opinion: distribution similarity to surveyed countries
# --------------------------------------------------------------------------

def _probabilities(p: Sequence[float]) -> list[float]:
    try:
        values = [float(x) for x in p]
    except (TypeError, ValueError) as e:
        raise ValueError(f"not a probability vector: {p!r}") from e
    total = sum(values)
    if not values or any(not math.isfinite(x) or x < 0 for x in values) or not total > 0:
        raise ValueError(f"not a probability vector: {p!r}")
    return [x / total for x in values]


def jensen_shannon(p: Sequence[float], q: Sequence[float]) -> float:
    """Jensen–Shannon *distance* between two distributions (base 2, in [0, 1]): the square
    root of the JS divergence, as ``scipy.spatial.distance.jensenshannon(p, q, base=2)``.

    Inputs are normalized to sum 1; vectors of different lengths, negative, non-finite or
    all-zero entries raise ``ValueError`` (they are data errors, not model text)."""
    p, q = _probabilities(p), _probabilities(q)
    if len(p) != len(q):
        raise ValueError(f"distributions of different lengths: {len(p)} and {len(q)}")

    def kl_to_mid(x: list[float], y: list[float]) -> float:
        # KL(x || (x+y)/2), written so that no (sub-normal) midpoint can divide by zero
        return sum(xi * math.log2(2 * xi / (xi + yi)) for xi, yi in zip(x, y) if xi > 0)

    return min(1.0, math.sqrt(max(0.0, (kl_to_mid(p, q) + kl_to_mid(q, p)) / 2)))


def answer_distribution(letters: Sequence[str], n_options: int) -> list[float] | None:
    """The share of each option A.. among the answers; empty answers and letters beyond
    ``n_options`` are dropped.  None when no answer is a valid letter (the caller reports it)."""
    try:
        n = int(n_options)
    except (TypeError, ValueError, OverflowError):
        return None
    if n <= 0 or n > 26:
        return None
    counts = [0] * n
    for a in letters or ():
        x = _canonical_choice(a) if isinstance(a, str) else ""
        if len(x) == 1 and x in _LETTERS[:n]:
            counts[_LETTERS.index(x)] += 1
    total = sum(counts)
    return [c / total for c in counts] if total else None


def opinion_similarity(letters: Sequence[str], survey: Mapping[str, Sequence[float]]) -> dict[str, float]:
    """Per country, ``1 − Jensen–Shannon distance`` (base 2) between the agents' answer
    distribution and the country's survey distribution.

    This is GlobalOpinionQA's published similarity metric (Durmus et al. 2023, "Towards
    Measuring the Representation of Subjective Global Opinions in Language Models":
    similarity = 1 − Jensen–Shannon distance); the layered-disagreement study reports the same
    quantity as mean Jensen–Shannon *distances* (0.120 / 0.116).  The distance, not the
    divergence, is used.  Each country's vector sets its number of options; countries whose
    vector is no probability vector are skipped; empty when no answer is a valid letter."""
    out: dict[str, float] = {}
    for country, dist in (survey or {}).items():
        try:
            target = _probabilities(dist)
        except ValueError:
            continue
        model = answer_distribution(letters, len(target))
        if model is not None:
            out[country] = 1.0 - jensen_shannon(model, target)
    return out


# --------------------------------------------------------------------------
# prompts
# --------------------------------------------------------------------------

def _letter_list(n: int) -> str:
    ls = list(_LETTERS[:n])
    return ls[0] if n == 1 else f"{', '.join(ls[:-1])} or {ls[-1]}"


def answer_instruction(answer_type: str, n_choices: int = 0) -> str:
    """The one-line answer-format instruction a prompt ends with.

    Every type asks for a plain ``Answer: …`` last line rather than ``\\boxed{}``: the demo
    model is a 135M chat model that follows an "Answer:" line far more reliably than LaTeX
    boxing, and every extractor here reads both."""
    _check_type(answer_type)
    if answer_type == "span":
        return ANSWER_LINES["short"]
    if answer_type == "yes_no":
        return ANSWER_LINES["yes/no"]
    if answer_type == "numeric":
        return 'Then finish with a last line of the form "Answer: <number>".'
    if answer_type == "math":
        return 'Then finish with a last line of the form "Answer: <final expression in LaTeX>".'
    return ('Then finish with a last line of the form "Answer: <letter>", the letter of one option '
            f"({_letter_list(_n_letters(n_choices))}).")
