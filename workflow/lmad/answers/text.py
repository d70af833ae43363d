"""Reading answers out of untrusted model text: what every answer type shares.

Plain regular-expression parsing, never evaluation: reasoning blocks, answer markers
("Answer:", "the final answer is"), ``\\boxed{}``, sentences and clean short segments; and
the official HotpotQA text normalization, which claim comparison also uses (with numbers'
signs kept: :func:`claim_key`).
"""

from __future__ import annotations

import functools
import re
import string

#: Answers longer than this many words are cut (first sentence, then first
#: clause, then the first MAX_ANSWER_WORDS words).
MAX_ANSWER_WORDS = 20

# --------------------------------------------------------------------------
# extraction
# --------------------------------------------------------------------------

BOLD = r"(?:\*\*|__)"

# "Answer:", "**Answer:**", "**Answer**:", "Final answer:", "## Final Answer:",
# "Short answer -" is *not* accepted: a colon (ASCII or full width) is required.
# Possessives ("Agent 2's answer:") are excluded because debate transcripts
# quote other agents' answers.
MARKER_COLON = re.compile(
    rf"(?<![\w'’])(?<!'s\s)(?<!’s\s)(?<!s'\s)(?<!s’\s)"
    rf"(?:(?:final|short|correct)\s+)?answer\s*{BOLD}?\s*[:：]",
    re.IGNORECASE,
)
# "The answer is X", "the final answer is: X", "My answer is X",
# "the answer to the question is X", "the answer would be X".
MARKER_IS = re.compile(
    r"\b(?:the|my|our)\s+(?:(?:final|correct|short)\s+)?answer"
    r"(?:\s+to\s+(?:the|this)\s+question)?\s*"
    rf"{BOLD}?\s*(?:is|would\s+be|remains)\b\s*{BOLD}?\s*:?",
    re.IGNORECASE,
)

_BOXED = re.compile(r"\\boxed\s*\{([^{}]*)\}")
_QUOTES = "\"'“”‘’«»`"
STRIP_CHARS = " \t\r\n" + _QUOTES + ".,;:!?*_#>-–—"
_ABBREVIATIONS = {
    "mr", "mrs", "ms", "dr", "st", "jr", "sr", "mt", "ft", "vs", "etc",
    "inc", "co", "ltd", "no", "prof", "gen", "col", "lt", "sgt", "capt",
    "gov", "sen", "rep", "rev", "univ", "dept", "corp", "bros", "approx",
}
_SENT_END = re.compile(r"[.!?]+[\"'”’)\]]*\s+")
_CLAUSE_END = re.compile(r"\s*(?:[,;:]|\s[–—-]\s)\s*")


def first_sentence(text: str) -> str:
    """Return the first sentence of ``text``.

    A sentence ends at ``.``, ``!`` or ``?`` followed by whitespace, unless the
    word before the period is a single letter (initials such as "J. K.",
    "U.S.") or a common abbreviation ("St.", "Dr.", "Jr.", ...).
    """
    for m in _SENT_END.finditer(text):
        before = text[: m.start()]
        word = re.findall(r"[A-Za-z]+$", before)
        if text[m.start()] == "." and word:
            w = word[0]
            if len(w) == 1 or w.lower() in _ABBREVIATIONS:
                continue
        return text[: m.start()]
    return text


def split_sentences(text: str) -> list[str]:
    out: list[str] = []
    rest = text
    while rest:
        first = first_sentence(rest)
        out.append(first)
        rest = rest[len(first):]
        rest = re.sub(r"^[.!?]+[\"'”’)\]]*\s*", "", rest)
    return out


def strip_markup(text: str) -> str:
    text = _BOXED.sub(r"\1", text)
    text = text.replace("**", "").replace("__", "").replace("`", "")
    text = re.sub(r"^\s*(?:[#>]+|[-*+•]\s)\s*", "", text)  # heading/quote/bullet
    text = text.replace("*", "")
    return strip_answer(text)


def strip_answer(text: str) -> str:
    """``text`` without surrounding quotes, markup and punctuation, except the minus sign of a
    leading negative number ("-3" stays "-3"; a bullet "- 3" loses its dash)."""
    out = text.strip(STRIP_CHARS)
    lead = len(text) - len(text.lstrip(STRIP_CHARS))
    if out and lead and text[lead - 1] in "-−" and out[0].isdigit():
        return "-" + out
    return out


def clean_segment(segment: str) -> str:
    """Strip markup and cut the segment to a short answer.

    1. Remove ``\\boxed{}``, markdown bold/italics/code, a leading heading,
       block-quote or bullet marker, surrounding quotes and trailing
       punctuation (including the trailing period).
    2. Keep the first sentence.
    3. If that is still longer than ``MAX_ANSWER_WORDS`` words keep the first
       clause (up to the first ``,`` ``;`` ``:`` or dash); if that is still
       too long keep the first ``MAX_ANSWER_WORDS`` words.
    """
    text = " ".join(strip_markup(segment).split())
    if not text:
        return ""
    text = strip_answer(first_sentence(text))
    if len(text.split()) > MAX_ANSWER_WORDS:
        text = strip_answer(_CLAUSE_END.split(text, maxsplit=1)[0])
    words = text.split()
    if len(words) > MAX_ANSWER_WORDS:
        text = strip_answer(" ".join(words[:MAX_ANSWER_WORDS]))
    return text


_THINK_BLOCK = re.compile(r"<think>.*?</think>", re.IGNORECASE | re.DOTALL)
_THINK_OPEN = re.compile(r"<think>", re.IGNORECASE)
_THINK_CLOSE = re.compile(r"</think>", re.IGNORECASE)

#: suffix of ``answer_method`` when a thinking block was removed before extraction
THINK_REMOVED = "+think_removed"


def strip_think(text: str) -> tuple[str, bool]:
    """Remove reasoning-model thinking (``<think>…</think>``) before answer extraction.

    Thinking should be off (``chat_template_kwargs: {enable_thinking: false}``), so any
    block that still appears is removed and reported: every closed block; a lone
    ``</think>`` (the template opened the block in the prompt) and everything before
    it; an unterminated ``<think>`` (the budget ran out while thinking) and everything
    after it. Returns ``(text, removed)``.
    """
    if not isinstance(text, str):
        return text, False
    out = _THINK_BLOCK.sub("", text)
    close = list(_THINK_CLOSE.finditer(out))
    if close:
        out = out[close[-1].end():]
    opened = _THINK_OPEN.search(out)
    if opened:
        out = out[: opened.start()]
    return out, out != text



# --------------------------------------------------------------------------
# the official normalization
# --------------------------------------------------------------------------

_DROP_PUNCT = str.maketrans("", "", string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")


@functools.lru_cache(maxsize=1 << 16)  # the same answers and golds are normalized again and again
def normalize_hotpot(s: str) -> str:
    """The official HotpotQA ``normalize_answer``, verbatim in behaviour.

    lower → remove ``string.punctuation`` → replace whole-word a/an/the by a
    space → collapse whitespace.
    """
    s = s.lower().translate(_DROP_PUNCT)
    s = _ARTICLES.sub(" ", s)
    return " ".join(s.split())


# a sign, decimal point, fraction bar or operator touching a digit is meaning: "-3" is not "3",
# "1/2" is not "12", "x+1" is not "x-1"
_NUMERIC_PUNCT = re.compile(r"(?<=\d)[-+*/^=<>]|[-+*/^=<>](?=\d)|(?<=\d)\.(?=\d)|(?<![\w.])\.(?=\d)")
_PROTECT = str.maketrans({c: chr(0xE000 + i) for i, c in enumerate("-+*/.^=<>")})
_UNPROTECT = {ord(v): k for k, v in _PROTECT.items()}


@functools.lru_cache(maxsize=1 << 16)
def claim_key(s: str) -> str:
    """The words of a claim as compared with another claim's: the official normalization,
    except that a sign, decimal point, fraction bar or operator next to a digit is kept
    ("x = -3" and "x = 3" are different claims)."""
    protected = _NUMERIC_PUNCT.sub(lambda m: m.group(0).translate(_PROTECT), s.lower())
    out = normalize_hotpot(protected)
    return out.translate(_UNPROTECT)


# --------------------------------------------------------------------------
# \\boxed{} and the segments after answer markers
# --------------------------------------------------------------------------

BOXED_START = re.compile(r"\\(?:boxed|fbox)\s*\{")


def brace_pairs(text: str) -> dict[int, int]:
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


def last_boxed(text: str) -> str | None:
    """Content of the last complete ``\\boxed{…}`` (balanced, so ``\\boxed{\\frac{1}{2}}`` works)."""
    starts = list(BOXED_START.finditer(text))
    if not starts:
        return None
    pairs = brace_pairs(text)
    for m in reversed(starts):
        end = pairs.get(m.end() - 1)
        if end is not None:
            return text[m.end(): end - 1]
    return None


def unwrap_boxed(s: str) -> str:
    m = BOXED_START.match(s)
    if m and brace_pairs(s).get(m.end() - 1) == len(s):
        return s[m.end(): -1]
    return s


SEG_STRIP = " \t\r\n*_`\"'“”‘’:>#"
SEG_MAX = 600  # an answer opens its segment; the cap keeps thousands of markers on one line linear


def line_after(text: str, pos: int) -> str:
    """The rest of the line from ``pos``, or the next non-empty line when that is blank
    ("**Final Answer:**" then a newline); at most ``SEG_MAX`` characters."""
    n = len(text)
    while pos <= n:
        end = text.find("\n", pos)
        end = n if end < 0 else end
        line = text[pos: min(end, pos + SEG_MAX)]
        if line.strip(SEG_STRIP) or end >= n:
            return line
        pos = end + 1
    return ""


def markers_in(text: str, markers) -> list[re.Match]:
    """Every answer marker in ``text``, last first."""
    return sorted((m for pat in markers for m in pat.finditer(text)), key=lambda m: m.start(), reverse=True)


def marker_segments(text: str, markers) -> list[str]:
    """What follows each answer marker, last marker first (see :func:`line_after`)."""
    return [line_after(text, m.end()) for m in markers_in(text, markers)]




#: the free-form answer markers, most general first
ANSWER_MARKERS = (MARKER_COLON, MARKER_IS)
#: a LaTeX text wrapper around an answer: \text{…}, \textbf{…}, \mathrm{…}
TEXT_WRAP = re.compile(r"\\(?:text|textbf|mathrm|mathbf|mbox)\s*\{([^{}]*)\}")


def read_reply(text, parse, *args) -> tuple[str, str]:
    """``parse(body, *args)`` of a reply with its reasoning block removed (the method then
    carries ``+think_removed``); ``("", "empty")`` for a blank or non-text reply. Cached:
    agents and rounds repeat replies, and each is parsed once per job."""
    if not isinstance(text, str):
        return "", "empty"
    return _read_cached(text, parse, args)


@functools.lru_cache(maxsize=1 << 14)
def _read_cached(text: str, parse, args: tuple) -> tuple[str, str]:
    body, removed = strip_think(text)
    if not body.strip(SEG_STRIP + ".,;!?-"):
        answer, method = "", "empty"
    else:
        answer, method = parse(body, *args)
    return answer, method + THINK_REMOVED if removed else method
