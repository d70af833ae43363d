"""Span answers (HotpotQA, 2WikiMultiHopQA, MuSiQue): a short free-form answer.

Extraction reads the last answer marker, else the last sentence (:func:`extract_answer`); a
yes/no question's "Yes, they are." becomes "yes" there, and only there. The vote groups by
the official normalization, except that a signed number, a fraction or LaTeX keeps its
punctuation (``-3`` is not ``3``) and a non-blank answer the normalization would erase ("A",
"The") is kept lower-cased. Scoring is the benchmark's official EM/F1 (:mod:`.official`).
"""

from __future__ import annotations

import functools
import re
from typing import Sequence

from .base import AnswerType, register
from .official import known_benchmark, score, scoring_rules
from .text import (MARKER_COLON, MARKER_IS, STRIP_CHARS, THINK_REMOVED, clean_segment, normalize_hotpot,
                   split_sentences, strip_markup, strip_think)

#: the answer-format lines of the free-form prompts
ANSWER_LINES = {
    "yes/no": 'Then finish with a last line of the form "Answer: yes" or "Answer: no".',
    "short": 'Then finish with a last line of the form "Answer: <short answer>".',
}

def extract_answer(text: str, yes_no: bool = False) -> tuple[str, str]:
    """Extract a short answer from free-form model output.

    With ``yes_no`` (the question is a yes/no question, see
    :func:`is_yes_no_question`) an answer that reads as yes or no
    (:func:`canonical_yes_no`) becomes exactly ``"yes"``/``"no"`` and the method
    gets the suffix ``+yes_no``; otherwise the answer is left as written.
    Thinking blocks are removed first (:func:`strip_think`); when one was, the method
    carries the suffix ``+think_removed`` (e.g. ``"answer_line+think_removed"``).

    Returns ``(answer, method)``; ``method`` names the rule that fired:

    ``"answer_line"``
        The text contains an answer marker.  Markers are ``Answer:`` (case
        insensitive, with optional markdown bold as in ``**Answer:**`` or
        ``**Answer**:``, optional ``Final``/``Short``/``Correct`` prefix, a
        full-width colon is accepted), or a phrase ``the/my/our [final]
        answer [to the question] is/would be/remains [:]``.  Possessive forms
        ("Agent 2's answer:") are not markers.  The **last** marker in the
        text wins.  The answer is the rest of that line; if the rest of the
        line is empty (``**Final Answer:**`` followed by a newline) the next
        non-empty line is used.  If that still yields nothing after cleaning,
        the previous marker is tried, and so on.
    ``"final_sentence"``
        No usable marker: the last sentence of the last non-empty line.
    ``"empty"``
        Nothing usable (empty/whitespace/markup-only text); answer ``""``.

    Every candidate is cleaned the same way: markdown and ``\\boxed{}`` are
    stripped, surrounding quotes and trailing punctuation removed, the first
    sentence kept, and answers over ``MAX_ANSWER_WORDS`` (20) words cut to
    their first clause, then hard-cut to 20 words.
    """
    if isinstance(text, str) and isinstance(yes_no, bool):
        return _extract_answer_of(text, yes_no)
    return _extract_answer(text, yes_no)


@functools.lru_cache(maxsize=1 << 14)  # agents and rounds repeat replies: each parsed once per job
def _extract_answer_of(text: str, yes_no: bool) -> tuple[str, str]:
    return _extract_answer(text, yes_no)


def _extract_answer(text: str, yes_no: bool) -> tuple[str, str]:
    text, removed = strip_think(text)
    answer, method = _extract(text)
    if removed:
        method += THINK_REMOVED
    if yes_no and answer:
        yn = canonical_yes_no(answer)
        if yn is not None and yn != answer:
            return yn, f"{method}+yes_no"
    return answer, method


def _extract(text: str) -> tuple[str, str]:
    if not isinstance(text, str) or not text.strip():
        return "", "empty"

    matches = list(MARKER_COLON.finditer(text)) + list(MARKER_IS.finditer(text))
    matches.sort(key=lambda m: m.start())
    for m in reversed(matches):
        rest = text[m.end():]
        line, _, after = rest.partition("\n")
        answer = clean_segment(line)
        if not answer and not line.strip(STRIP_CHARS):
            for nxt in after.split("\n"):
                if nxt.strip(STRIP_CHARS):
                    answer = clean_segment(nxt)
                    break
        if answer:
            return answer, "answer_line"

    lines = [ln for ln in text.splitlines() if strip_markup(ln)]
    if lines:
        sentences = [s for s in split_sentences(" ".join(lines[-1].split())) if strip_markup(s)]
        if sentences:
            answer = clean_segment(sentences[-1])
            if answer:
                return answer, "final_sentence"
    return "", "empty"


_YES_NO = {"yes": "yes", "no": "no", "true": "yes", "false": "no"}
_YES_NO_LEAD = re.compile(
    r"^[\s\"'“”‘’*_`(\[]*(yes|no|true|false)(?=\s*(?:[,.;:!?)\]–—\"'”’*]|\s-\s))",
    re.IGNORECASE,
)
# "No. 5", "No. 10 Downing Street", "no.7": the abbreviation of "number", never a no.
_NUMBER_ABBREV = re.compile(r"^[\s\"'“”‘’*_`(\[]*no\s*\.\s*\d", re.IGNORECASE)


def canonical_yes_no(s: str) -> str | None:
    """Return ``"yes"``/``"no"`` if ``s`` reads as a yes/no answer, else ``None``.

    ``s`` reads as yes/no when

    * its official normalization is exactly ``yes``/``no``/``true``/``false``
      (``"No."``, ``"TRUE"``, ``"**Yes**"``), or
    * its first word is one of those four and is immediately followed by
      punctuation (``"Yes, they are"``, ``"No. Both are..."``,
      ``"False - it was 1990"``),

    except "No." followed by a number ("No. 5", "No. 10 Downing Street"), which
    abbreviates "number".  A first word followed by more words *without*
    punctuation is never yes/no: "No Doubt", "Yes Minister" and "True
    Detective" are entities.  Used by extraction for yes/no questions only
    (:func:`extract_answer`); the scorer never calls it.
    """
    if _NUMBER_ABBREV.match(s):
        return None
    norm = normalize_hotpot(s)
    if norm in _YES_NO:
        return _YES_NO[norm]
    m = _YES_NO_LEAD.match(s)
    if m:
        return _YES_NO[m.group(1).lower()]
    return None


# Question-initial auxiliaries and modals: "Were X and Y of the same nationality?",
# "Could Shakespeare have ...?" ask for yes or no; wh-questions never do.
_YES_NO_QUESTION = re.compile(
    r"^\W*(?:is|are|was|were|am|do|does|did|can|could|has|have|had|will|would|shall|should|may|might|must)\b",
    re.IGNORECASE,
)


def is_yes_no_question(question: str, dataset: str = "") -> bool:
    """Whether a question asks for yes or no, from its text alone (never the gold):
    every StrategyQA question; otherwise a question that opens with an auxiliary or
    modal verb (HotpotQA and 2Wiki comparison questions such as "Are both ... from the
    same country?")."""
    if dataset and known_benchmark(dataset) and scoring_rules(dataset) == "yes_no":
        return True
    return bool(_YES_NO_QUESTION.match(question or ""))


# canonical numbers and expressions keep their punctuation: it is their meaning
_TYPED_CANONICAL = re.compile(r"-?\d+(?:/\d+)?|.*[\\^{}].*")
_BLANK = STRIP_CHARS + "()[]{}"


def normalize_answer(s: str) -> str:
    """A span answer's grouping key: the official normalization; a signed number, fraction or
    LaTeX as written; and the lower-cased words of an answer the normalization would erase
    ("A", "The"), so that it still counts as an answer. "" only for a blank answer."""
    if _TYPED_CANONICAL.fullmatch(s):
        return s
    norm = normalize_hotpot(s)
    if norm or not s.strip(_BLANK):
        return norm
    return " ".join(s.lower().strip(_BLANK).split())


@register
class SpanType(AnswerType):
    name = "span"
    free_form = True

    def instruction(self, n_choices: int = 0) -> str:
        return ANSWER_LINES["short"]

    def extract(self, text, choices: Sequence[str] = (), yes_no: bool = False, n_choices: int = 0) -> tuple[str, str]:
        return extract_answer(text, yes_no=yes_no)

    def canonical(self, answer) -> str:
        return normalize_answer(answer) if isinstance(answer, str) else ""

    def is_correct(self, pred, golds, rules: str = "hotpotqa") -> bool | None:
        em, _ = self.score(pred, golds, rules)
        return em > 0

    def score(self, pred, golds, rules: str = "hotpotqa") -> tuple[float, float]:
        gs = [golds] if isinstance(golds, str) else [g for g in (golds or ()) if isinstance(g, str)]
        return score(pred if isinstance(pred, str) else "", gs, rules)

    def mentions(self, text: str, gold: str, choices: Sequence[str] = ()) -> bool:
        """The gold's normalized words appear as one run in the text's; a yes or no gold never
        does (the words say nothing there)."""
        said, words = normalize_hotpot(text or "").split(), normalize_hotpot(gold or "").split()
        n = len(words)
        return bool(words) and words not in (["yes"], ["no"]) and any(said[i:i + n] == words
                                                                      for i in range(len(said) - n + 1))


def rules_of(benchmark) -> str:
    """The benchmark's official scoring rules; EM is the same under every rule set, so an
    unknown benchmark keeps HotpotQA's."""
    try:
        return scoring_rules(benchmark or "")
    except ValueError:
        return "hotpotqa"
