"""Answer extraction, normalization, scoring and voting.

Model output is untrusted text.  Nothing here evaluates it; everything is
plain regular-expression parsing, and :func:`extract_answer` reports which
rule produced the answer so that fallbacks can be counted downstream.

Scoring follows each benchmark's official script and never alters a prediction
(:func:`score`): HotpotQA's ``hotpot_evaluate_v1.py`` for HotpotQA and
2WikiMultiHopQA (whose script is adapted from it), MuSiQue's own SQuAD-style
EM/F1 for MuSiQue, and yes/no exact match for StrategyQA; always the max over
the answer and its aliases.  Only *extraction* knows about yes/no questions:
``extract_answer(text, yes_no=True)`` turns "Yes, they are." into "yes" and
says so in its method (``…+yes_no``).
"""

from __future__ import annotations

import functools
import re
import string
from collections import Counter
from typing import Callable, Sequence

__all__ = [
    "MAX_ANSWER_WORDS",
    "MARKER_COLON",
    "MARKER_IS",
    "extract_answer",
    "clean_segment",
    "first_sentence",
    "strip_think",
    "normalize_hotpot",
    "canonical_yes_no",
    "normalize_answer",
    "is_yes_no_question",
    "SCORING_RULES",
    "scoring_rules",
    "score",
    "exact_match",
    "f1_score",
    "majority_vote",
    "all_agree",
]

#: Answers longer than this many words are cut (first sentence, then first
#: clause, then the first MAX_ANSWER_WORDS words).
MAX_ANSWER_WORDS = 20

# --------------------------------------------------------------------------
# extraction
# --------------------------------------------------------------------------

_BOLD = r"(?:\*\*|__)"

# "Answer:", "**Answer:**", "**Answer**:", "Final answer:", "## Final Answer:",
# "Short answer -" is *not* accepted: a colon (ASCII or full width) is required.
# Possessives ("Agent 2's answer:") are excluded because debate transcripts
# quote other agents' answers.
MARKER_COLON = re.compile(
    rf"(?<![\w'’])(?<!'s\s)(?<!’s\s)(?<!s'\s)(?<!s’\s)"
    rf"(?:(?:final|short|correct)\s+)?answer\s*{_BOLD}?\s*[:：]",
    re.IGNORECASE,
)
# "The answer is X", "the final answer is: X", "My answer is X",
# "the answer to the question is X", "the answer would be X".
MARKER_IS = re.compile(
    r"\b(?:the|my|our)\s+(?:(?:final|correct|short)\s+)?answer"
    r"(?:\s+to\s+(?:the|this)\s+question)?\s*"
    rf"{_BOLD}?\s*(?:is|would\s+be|remains)\b\s*{_BOLD}?\s*:?",
    re.IGNORECASE,
)

_BOXED = re.compile(r"\\boxed\s*\{([^{}]*)\}")
_QUOTES = "\"'“”‘’«»`"
_STRIP_CHARS = " \t\r\n" + _QUOTES + ".,;:!?*_#>-–—"
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


def _split_sentences(text: str) -> list[str]:
    out: list[str] = []
    rest = text
    while rest:
        first = first_sentence(rest)
        out.append(first)
        rest = rest[len(first):]
        rest = re.sub(r"^[.!?]+[\"'”’)\]]*\s*", "", rest)
    return out


def _strip_markup(text: str) -> str:
    text = _BOXED.sub(r"\1", text)
    text = text.replace("**", "").replace("__", "").replace("`", "")
    text = re.sub(r"^\s*(?:[#>]+|[-*+•]\s)\s*", "", text)  # heading/quote/bullet
    text = text.replace("*", "")
    return text.strip(_STRIP_CHARS)


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
    text = " ".join(_strip_markup(segment).split())
    if not text:
        return ""
    text = first_sentence(text).strip(_STRIP_CHARS)
    if len(text.split()) > MAX_ANSWER_WORDS:
        text = _CLAUSE_END.split(text, maxsplit=1)[0].strip(_STRIP_CHARS)
    words = text.split()
    if len(words) > MAX_ANSWER_WORDS:
        text = " ".join(words[:MAX_ANSWER_WORDS]).strip(_STRIP_CHARS)
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
        if not answer and not line.strip(_STRIP_CHARS):
            for nxt in after.split("\n"):
                if nxt.strip(_STRIP_CHARS):
                    answer = clean_segment(nxt)
                    break
        if answer:
            return answer, "answer_line"

    lines = [ln for ln in text.splitlines() if _strip_markup(ln)]
    if lines:
        sentences = [s for s in _split_sentences(" ".join(lines[-1].split())) if _strip_markup(s)]
        if sentences:
            answer = clean_segment(sentences[-1])
            if answer:
                return answer, "final_sentence"
    return "", "empty"


# --------------------------------------------------------------------------
# normalization and scoring
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


# canonical answers of the number and expression types (``answer_types.canonical``): "-3",
# "1/2", "\\sqrt{2}", "x^{2}+1". Punctuation is their meaning, so they are their own key.
_TYPED_CANONICAL = re.compile(r"-?\d+(?:/\d+)?|.*[\\^{}].*")


def normalize_answer(s: str) -> str:
    """The key answers are grouped by (votes, agreement): the official HotpotQA
    normalization.  Yes/no canonicalization happens earlier, at extraction, and only
    for yes/no questions, so "Yes, Minister" stays an entity here.  A canonical number or
    LaTeX expression (what extraction gives on math tasks) is its own key: the official
    normalization would make "-3" equal "3" and "1/2" equal "12"."""
    if _TYPED_CANONICAL.fullmatch(s):
        return s
    return normalize_hotpot(s)


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
    if dataset and _known(dataset) and scoring_rules(dataset) == "yes_no":
        return True
    return bool(_YES_NO_QUESTION.match(question or ""))


def _as_list(golds: str | Sequence[str]) -> list[str]:
    if isinstance(golds, str):
        return [golds]
    return [g for g in golds if g is not None]


#: Benchmark → official scoring rules.  2WikiMultiHopQA's official script is HotpotQA's
#: (adapted, same normalization and F1 special case); its aliases come from the data.
SCORING_RULES = {"hotpotqa": "hotpotqa", "2wikimultihopqa": "hotpotqa", "musique": "musique",
                 "strategyqa": "yes_no"}
_SHARD = re.compile(r"\.shard\d+$")


def _known(dataset: str) -> bool:
    return _SHARD.sub("", dataset) in SCORING_RULES


def scoring_rules(dataset: str) -> str:
    """The official rules of a dataset (its benchmark name, or a shard of it)."""
    try:
        return SCORING_RULES[_SHARD.sub("", dataset)]
    except KeyError:
        raise ValueError(f"no official scoring rules for dataset {dataset!r}; "
                         f"known: {', '.join(SCORING_RULES)}") from None


def _f1_hotpot(pred_norm: str, gold_norm: str) -> float:
    # hotpot_evaluate_v1.f1_score: a yes/no/noanswer mismatch scores 0 whatever the overlap
    special = ("yes", "no", "noanswer")
    if (pred_norm in special or gold_norm in special) and pred_norm != gold_norm:
        return 0.0
    return _token_f1(pred_norm.split(), gold_norm.split())


def _f1_squad(pred_norm: str, gold_norm: str) -> float:
    # MuSiQue's metrics/answer.py (SQuAD v2): no special case; two empty sides score 1
    p_toks, g_toks = pred_norm.split(), gold_norm.split()
    if not p_toks or not g_toks:
        return float(p_toks == g_toks)
    return _token_f1(p_toks, g_toks)


def _token_f1(p_toks: list[str], g_toks: list[str]) -> float:
    same = sum((Counter(p_toks) & Counter(g_toks)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(p_toks), same / len(g_toks)
    return 2 * precision * recall / (precision + recall)


def score(pred: str, golds: str | Sequence[str], rules: str = "hotpotqa") -> tuple[float, float]:
    """(EM, F1) of a prediction as the benchmark's official script computes them, maximised
    over golds (answer + aliases).  The prediction is scored as written.

    ``rules``: ``hotpotqa`` (HotpotQA, 2Wiki), ``musique``, or ``yes_no`` (StrategyQA: EM
    of the normalized prediction against the yes/no gold; F1 equals EM, the benchmark
    reports accuracy only)."""
    gs = _as_list(golds)
    if not gs:
        return 0.0, 0.0
    if isinstance(pred, str) and all(isinstance(g, str) for g in gs):
        return _score_of(pred, tuple(gs), rules)
    return _score(pred, gs, rules)


@functools.lru_cache(maxsize=1 << 16)  # the paper analyses score the same answer against a gold again and again
def _score_of(pred: str, golds: tuple[str, ...], rules: str) -> tuple[float, float]:
    return _score(pred, golds, rules)


def _score(pred: str, gs: Sequence[str], rules: str) -> tuple[float, float]:
    p = normalize_hotpot(pred)
    norms = [normalize_hotpot(g) for g in gs]
    em = float(any(p == g for g in norms))
    if rules == "hotpotqa":
        return em, max(_f1_hotpot(p, g) for g in norms)
    if rules == "musique":
        return em, max(_f1_squad(p, g) for g in norms)
    if rules == "yes_no":
        return em, em
    raise ValueError(f"unknown scoring rules {rules!r}; expected hotpotqa, musique or yes_no")


def exact_match(pred: str, golds: str | Sequence[str], rules: str = "hotpotqa") -> float:
    """Official exact match (see :func:`score`)."""
    return score(pred, golds, rules)[0]


def f1_score(pred: str, golds: str | Sequence[str], rules: str = "hotpotqa") -> float:
    """Official token F1, maximised over golds (see :func:`score`)."""
    return score(pred, golds, rules)[1]


# --------------------------------------------------------------------------
# voting
# --------------------------------------------------------------------------

def agent_order(n: int, order_key: Sequence | Callable[[int], object] | None = None) -> list[int]:
    """Indices 0..n-1 in agent order: by index, or by ``(order_key, index)`` (see
    :func:`majority_vote`)."""
    if order_key is None:
        return list(range(n))
    if callable(order_key):
        keys = [(order_key(i), i) for i in range(n)]
    else:
        if len(order_key) != n:
            raise ValueError("order_key must have one key per answer")
        keys = [(order_key[i], i) for i in range(n)]
    return sorted(range(n), key=lambda i: keys[i])


def majority_vote(
    answers: Sequence[str],
    order_key: Sequence | Callable[[int], object] | None = None,
) -> tuple[str, dict]:
    """Normalized majority vote over agents' answers.

    Answers are grouped by :func:`normalize_answer`.  The group with the most
    votes wins and the returned answer is the *original* string of the
    group's first agent.

    Empty answers (normalizing to ``""``) never win unless every answer is
    empty, in which case ``""`` is returned.

    **Tie rule.**  Among tied groups the winner is the group whose first
    member comes first in agent order.  Agent order is the list index
    (agent 0 = lowest-temperature persona) unless ``order_key`` is given: a
    sequence of sortable keys, one per answer, or a callable ``i -> key``;
    agents are then ordered by ``(key, index)``.  The same order picks the
    representative original string of the winning group.  The result is
    deterministic.

    ``info`` holds ``votes`` ({normalized answer: count}, empty included),
    ``tie`` (more than one non-empty group shares the top count),
    ``winner_norm`` and ``strict_majority`` (winner has more than half of
    *all* answers; False when nothing non-empty won).
    """
    n = len(answers)
    order = agent_order(n, order_key)

    return tally(answers, order, [normalize_answer(a or "") for a in answers])


def tally(answers: Sequence[str], order: Sequence[int], keys: Sequence[str]) -> tuple[str, dict]:
    """:func:`majority_vote`'s count and result, given each answer's group key ("" for no
    answer) and the agent order; shared with the typed vote (``answer_types.majority_vote``)."""
    votes: dict[str, int] = {}
    for i in order:
        votes[keys[i]] = votes.get(keys[i], 0) + 1
    nonempty = {k: v for k, v in votes.items() if k}
    if not nonempty:
        return "", {"votes": votes, "tie": False, "winner_norm": "", "strict_majority": False}
    top = max(nonempty.values())
    tied = [k for k, v in nonempty.items() if v == top]  # already in agent order
    winner = tied[0]
    rep = next(i for i in order if keys[i] == winner)
    return answers[rep], {"votes": votes, "tie": len(tied) > 1, "winner_norm": winner,
                          "strict_majority": top * 2 > len(answers)}


def all_agree(answers: Sequence[str]) -> bool:
    """True iff there is at least one answer and all normalize to the same non-empty string."""
    norms = {normalize_answer(a or "") for a in answers}
    return len(answers) > 0 and len(norms) == 1 and "" not in norms
