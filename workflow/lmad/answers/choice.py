"""Multiple-choice answers (GPQA, MMLU, MMLU-Redux, TruthfulQA): the letter of one option.

Letters run A.. up to the number of options (4 when unknown). The canonical form is the
upper-case letter ("(b)" → "B"), so "A" is an answer like any other. Extraction tries, in
order: ``\\boxed{B}``, the last answer marker ("Answer: (B)", "the correct option is B", or
the exact text of one option), a line that is just a letter, a line that opens with an option
as listed ("D) The brain"); several different letters where one is asked give no answer
(``ambiguous``).
"""

from __future__ import annotations

import re
from typing import Sequence

from .base import AnswerType, register
from .text import BOLD, SEG_STRIP, TEXT_WRAP, first_sentence, last_boxed, marker_segments, normalize_hotpot, read_reply

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def n_letters(n_choices) -> int:
    """How many option letters a question has: 0 (or nonsense) means the common four; more
    than 26 cannot be lettered."""
    try:
        n = int(n_choices)
    except (TypeError, ValueError, OverflowError):
        return 4
    return 4 if n <= 0 else min(n, 26)


def letter_list(n: int) -> str:
    ls = list(LETTERS[:n])
    return ls[0] if n == 1 else f"{', '.join(ls[:-1])} or {ls[-1]}"


# multiple choice adds "option"/"choice" to the markers: "Correct option: B", "the best choice is (C)"
_POSSESSIVE = r"(?<![\w'’])(?<!'s\s)(?<!’s\s)(?<!s'\s)(?<!s’\s)"
# multiple choice adds "option"/"choice": "Correct option: B", "the best choice is (C)"
_CHOICE_COLON = re.compile(
    rf"{_POSSESSIVE}(?:(?:final|short|correct|best|right)\s+)?(?:answer|option|choice)\s*{BOLD}?\s*[:：]",
    re.IGNORECASE,
)
_CHOICE_IS = re.compile(
    r"\b(?:the|my|our)\s+(?:(?:final|correct|short|best|right)\s+)*(?:answer|option|choice)"
    r"(?:\s+to\s+(?:the|this)\s+question)?\s*"
    rf"{BOLD}?\s*(?:is|would\s+be|remains)\b\s*{BOLD}?\s*:?",
    re.IGNORECASE,
)
_CHOICE_MARKERS = (_CHOICE_COLON, _CHOICE_IS)

_LEAD = r"[\s*_`\"'“”‘’]*"
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
    return TEXT_WRAP.sub(r"\1", seg).replace("$", "")


def _parse_choice(seg: str, letters: str, options: tuple[str, ...]) -> tuple[str, str] | None:
    """(letter, method) from what follows a marker or fills a box, where lower case counts;
    None when it names no option."""
    seg = _choice_clean(seg)
    whole = _WHOLE_LETTER.match(seg)
    if whole and whole.group("x").upper() in letters:
        return whole.group("x").upper(), "letter"
    if options:
        first = first_sentence(seg.strip(SEG_STRIP))
        for cand in (seg, first):
            norm = normalize_hotpot(cand.strip(SEG_STRIP))
            hits = {LETTERS[i] for i, o in enumerate(options) if norm and normalize_hotpot(o) == norm}
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
    sentence = first_sentence(seg.strip(SEG_STRIP))
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


def _extract_choice(text: str, n: int, choices: tuple[str, ...]) -> tuple[str, str]:
    letters = LETTERS[:n]
    options = choices[: len(letters)]
    boxed = last_boxed(text)
    if boxed is not None and boxed.strip():
        got = _parse_choice(boxed, letters, options)
        if got:
            letter, how = got
            return letter, ("boxed" if how == "letter" else how)
    for seg in marker_segments(text, _CHOICE_MARKERS):
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
    rest = normalize_hotpot(first_sentence(m.group("rest").strip(SEG_STRIP)).strip(SEG_STRIP))
    named = {LETTERS[i] for i, o in enumerate(options) if rest and normalize_hotpot(o) == rest}
    if named and named != {letter}:
        return "", "ambiguous"
    return letter, "letter_lead"


def canonical_choice(s: str) -> str:
    m = _WHOLE_LETTER.match(_choice_clean(s))
    return m.group("x").upper() if m else " ".join(s.split())


_OPTION_SAID = re.compile(r"(?:\((?P<p>[A-Z])\)|\b(?:option|choice|answer)\s+(?P<w>[A-Z])\b)")


@register
class ChoiceType(AnswerType):
    name = "choice"

    def instruction(self, n_choices: int = 0) -> str:
        return ('Then finish with a last line of the form "Answer: <letter>", the letter of one option '
                f"({letter_list(n_letters(n_choices))}).")

    def extract(self, text, choices: Sequence[str] = (), yes_no: bool = False, n_choices: int = 0) -> tuple[str, str]:
        try:
            options = tuple(str(c) for c in choices) if choices and not isinstance(choices, str) else ()
        except TypeError:
            options = ()
        return read_reply(text, _extract_choice, n_letters(n_choices or len(options)), options)

    def canonical(self, answer) -> str:
        return canonical_choice(answer) if isinstance(answer, str) else ""

    def mentions(self, text: str, gold: str, choices: Sequence[str] = ()) -> bool:
        """The text names the gold's option: "(B)", "option B", or the option's own words."""
        letter = canonical_choice(gold or "")
        if len(letter) != 1:
            return False
        named = {m.group("p") or m.group("w") for m in _OPTION_SAID.finditer(text or "")}
        if letter in named:
            return True
        i = LETTERS.index(letter)
        words = normalize_hotpot(str(choices[i])).split() if i < len(choices) else []
        said = normalize_hotpot(text or "").split()
        return bool(words) and any(said[k:k + len(words)] == words for k in range(len(said) - len(words) + 1))
