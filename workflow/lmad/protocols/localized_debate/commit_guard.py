"""Commit guard (paper §3.3, eq. 4): which proposed repairs enter the committed state P.

Every check runs under every policy and is recorded (``check``, ``passed``,
``required``, ``detail``); the policy only decides which checks gate admission:

=========  ====================  =============================================
policy     method (lmad.registry) admits when
=========  ====================  =============================================
strict     ``lmad``              concrete ∧ relation_model ∧ evidence
                                 (``lmad.guard.relation: lexical``: concrete ∧
                                 subject ∧ relation ∧ evidence)
concrete   ``lmad-concrete``     concrete
always     ``lmad-always``       always — every proposal, even an empty one
=========  ====================  =============================================

The checks:

``concrete``
    The resolver output is a JSON object with a ``nodes`` list holding at least one
    non-blank string: an explicit claim.
``subject`` (lexical)
    The question's subject is preserved: the repair (all nodes together) mentions at
    least one SUBJECT SPAN of the question, whole. Subject spans are the question's runs
    of words that begin with a capital letter or a digit (joined by "of", "de", "von",
    …, never across punctuation), without stopwords and without a question-initial
    auxiliary or modal ("Were", "Might", "Is", "Can"): the named entities the question
    is about ("arthur gore", "2nd earl of arran"; "scott derrickson", "ed wood").
    Compared casefolded as word sequences, possessive 's removed.
``relation`` (lexical)
    The question's relation is preserved: the repair mentions at least one RELATION
    WORD of the question, i.e. one of its remaining lowercase content words
    ("paternal", "grandfather"; "band", "hail"), compared after light suffix stripping
    (-s, -es, -ed, -ing), so "hails" matches "hail" — or, for a question about two or
    more subject spans (a comparison), the repair states something about every one of
    them: "Scott Derrickson is American and Ed Wood is American." answers "Were Scott
    Derrickson and Ed Wood of the same nationality?" without the word "nationality".

    Both are deterministic anchoring tests, not entailment: they reject a repair that
    drifts to other entities or another relation, not one that misstates the relation
    in the question's own words ("maternal grandfather" passes on "grandfather"). A
    question with no subject spans (or no relation words) passes that check with a
    detail starting "n/a". The detail lists the matched and the expected words.
``relation_model``
    The backbone itself, at temperature 0 and constrained to "yes" / "no", judges
    whether the repair keeps the question's subject and relation
    (``relation_check.py``, prompt ``config/prompts/relation_check.txt``; asked in the
    resolve stage for every repair with a claim, one batch). Config
    ``lmad.guard.relation`` chooses which of the two the strict policy requires:
    ``model`` (the paper's reading: ``relation_model``) or ``lexical`` (``subject`` and
    ``relation``). Both are computed and recorded for every repair whatever the choice.
``evidence``
    At least one quotation, and every quotation has at least ``min_quote_words`` words
    and appears verbatim inside ONE passage of the context after normalization. A
    passage's text is its sentences joined by single spaces (titles are not evidence).
    A question without passages quotes its own statement (:func:`evidence_of`).

Verbatim normalization (quotes and passages alike, :func:`normalize_verbatim`): Unicode
NFKC; curly single/double quotes and primes → ASCII ``'`` and ``"``; hyphen and dash
variants (‐ ‑ ‒ – — ― −) → ``-``; every whitespace run → one space; casefold. A
quotation is then trimmed (:func:`quote_core`) of surrounding whitespace and quote
marks, leading/trailing ellipses, and trailing sentence punctuation (``. , ; : ! ?``),
which mark where it was cut rather than what it says. Nothing else is forgiven: a
changed or dropped word, or an internal "..." / "[...]" abridgment, fails.
"""
from __future__ import annotations

import functools
import re
import unicodedata
from dataclasses import dataclass

from ...prompts import question_text
from .resolve import Repair

POLICIES = ("strict", "concrete", "always")
RELATION_MODES = ("model", "lexical")
REQUIRED = {"strict": {"model": ("concrete", "relation_model", "evidence"),
                       "lexical": ("concrete", "subject", "relation", "evidence")},
            "concrete": {"model": ("concrete",), "lexical": ("concrete",)},
            "always": {"model": (), "lexical": ()}}
CHECKS = ("concrete", "subject", "relation", "relation_model", "evidence")

# --------------------------------------------------------------------------- verbatim

_QUOTE_MAP = str.maketrans({
    "‘": "'", "’": "'", "‚": "'", "‛": "'", "′": "'", "`": "'",
    "“": '"', "”": '"', "„": '"', "‟": '"', "″": '"', "«": '"', "»": '"',
    "‐": "-", "‑": "-", "‒": "-", "–": "-", "—": "-", "―": "-", "−": "-",
})
_TRIM_LEFT = re.compile(r"^(?:[\s'\"]|\.\.\.)+")
_TRIM_RIGHT = re.compile(r"(?:[\s'\".,;:!?]|\.\.\.)+$")


def normalize_verbatim(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).translate(_QUOTE_MAP)
    return " ".join(text.split()).casefold()


def quote_core(quote: str) -> str:
    """A quotation's normalized text without the marks of where it was cut."""
    text = normalize_verbatim(quote)
    return _TRIM_RIGHT.sub("", _TRIM_LEFT.sub("", text))


def passage_texts(context: list[dict]) -> list[tuple[str, str]]:
    """(title, normalized text) per passage."""
    return [(p["title"], normalize_verbatim(" ".join(p["sentences"]))) for p in context]


def find_quote(quote: str, context: list[dict], min_words: int) -> tuple[bool, str]:
    core = quote_core(quote)
    n = len(core.split())
    if n < min_words:
        return False, f"too short ({n} < {min_words} words)"
    for title, text in passage_texts(context):
        if core in text:
            return True, f'verbatim in "{title}"'
    return False, "not in any passage"


# --------------------------------------------------------------------- question terms

STOPWORDS = frozenset("""
a about above after again against all also am an and any are as at be because been before being below
between both but by can could did do does doing down during each either few for from further had has have
having he her here hers herself him himself his how i if in into is it its itself just least less many me
more most my myself neither no nor not of off on once only or other our ours ourselves out over own same
she should so some such than that the their theirs them themselves then there these they this those
through to too under until up upon very was we were what whatever when where whereas whether which while
who whom whose why will with within without would you your yours yourself yourselves
name identify list give tell state find known
""".split())

_WORD = re.compile(r"[^\W_]+(?:['\-][^\W_]+)*")
_POSSESSIVE = re.compile(r"'s$")


def _words(text: str) -> list[str]:
    return _WORD.findall(unicodedata.normalize("NFKC", text).translate(_QUOTE_MAP))


def _key(word: str) -> str:
    return _POSSESSIVE.sub("", word.casefold())


def _stem(word: str) -> str:
    key = _key(word)
    for suffix in ("ing", "ed", "es", "s"):
        if key.endswith(suffix) and len(key) - len(suffix) >= 3:
            return key[: -len(suffix)]
    return key


# a question-initial auxiliary or modal is capitalised only because it opens the sentence
AUXILIARIES = frozenset("""
am are is was were be been do does did has have had can could may might must shall should will would ought
need dare
""".split())
# lowercase words that may join the capitalised words of one name ("Earl of Arran", "Ludwig van Beethoven")
NAME_JOINERS = frozenset("of de del della der di du da la le van von y".split())


def _spans_of(text: str) -> list[list[str]]:
    """Runs of capitalised / digit-initial words (keys) not separated by punctuation."""
    text = unicodedata.normalize("NFKC", text).translate(_QUOTE_MAP)
    spans, current, pending, last_end, first = [], [], [], 0, True
    for m in _WORD.finditer(text):
        w, key = m.group(), _key(m.group())
        joined = not text[last_end:m.start()].strip()  # nothing but spaces since the previous word
        last_end = m.end()
        opener = first and key in AUXILIARIES
        first = False
        if not joined:
            current, pending = _close(spans, current), []
        if (w[0].isupper() or w[0].isdigit()) and key not in STOPWORDS and not opener:
            current += pending + [key]
            pending = []
        elif current and key in NAME_JOINERS:
            pending.append(key)
        else:
            current, pending = _close(spans, current), []
    _close(spans, current)
    return spans


def _close(spans: list[list[str]], current: list[str]) -> list[str]:
    if current and current not in spans:
        spans.append(current)
    return []


def question_terms(question: str) -> tuple[list[str], list[str]]:
    """(subject spans, relation words) of a question, in order, without repeats."""
    spans, relation = _question_terms(question)
    return list(spans), list(relation)


@functools.lru_cache(maxsize=4096)  # every guarded repair of a question asks again
def _question_terms(question: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    spans = _spans_of(question)
    in_span = {k for span in spans for k in span}
    relation = []
    for w in _words(question):
        key = _key(w)
        if (not key or key in STOPWORDS or key in AUXILIARIES or key in in_span or key in relation
                or w[0].isupper() or w[0].isdigit()):
            continue
        relation.append(key)
    return tuple(" ".join(s) for s in spans), tuple(relation)


def _mentions(span: str, said: list[str]) -> bool:
    """Whether the word sequence ``span`` occurs, whole, in ``said`` (casefolded keys)."""
    words = span.split()
    return any(said[i:i + len(words)] == words for i in range(len(said) - len(words) + 1))


# ----------------------------------------------------------------------------- checks


@dataclass(frozen=True)
class Check:
    check: str
    passed: bool
    required: bool
    detail: str


def check_concrete(repair: Repair) -> tuple[bool, str]:
    if not repair.shape_ok:
        return False, f"no explicit claim: {repair.parse_error or 'no nodes'}"
    if not repair.nodes:
        return False, "no explicit claim: the nodes list is empty"
    return True, f"{len(repair.nodes)} node(s)"


def check_subject(question: str, nodes: list[str]) -> tuple[bool, str]:
    subject, _ = question_terms(question)
    if not subject:
        return True, "n/a: the question has no subject spans"
    said = [_key(w) for n in nodes for w in _words(n)]
    hit = [t for t in subject if _mentions(t, said)]
    return bool(hit), f"matched {hit} of subject spans {subject}"


def check_relation(question: str, nodes: list[str]) -> tuple[bool, str]:
    subject, relation = question_terms(question)
    if not relation:
        return True, "n/a: the question has no relation words"
    keys = [_key(w) for n in nodes for w in _words(n)]
    said = {_stem(k) for k in keys}
    hit = [t for t in relation if _stem(t) in said]
    if hit:
        return True, f"matched {hit} of relation words {relation}"
    if len(subject) >= 2 and all(_mentions(t, keys) for t in subject):
        return True, f"comparison: every subject span {subject} is addressed (relation words {relation})"
    return False, f"matched [] of relation words {relation}"


def check_relation_model(verdict: str | None) -> tuple[bool, str]:
    """The backbone's own yes/no on subject and relation (``relation_check.py``)."""
    if verdict is None:
        return False, "not asked"
    if verdict in ("yes", "no"):
        return verdict == "yes", f"model: {verdict}"
    return False, f"model reply not yes/no: {verdict!r}"


def check_evidence(quotes: list[str], context: list[dict], min_words: int) -> tuple[bool, str]:
    if not quotes:
        return False, "no quotation"
    results = [find_quote(q, context, min_words) for q in quotes]
    detail = "; ".join(f"quote {i}: {why}" for i, (_, why) in enumerate(results, 1))
    return all(ok for ok, _ in results), detail


@dataclass(frozen=True)
class GuardResult:
    policy: str
    admitted: bool
    checks: list[Check]

    def records(self) -> list[dict]:
        # by hand: dataclasses.asdict deep-copies every field (a resolve job makes ~10,000 of these)
        return [{"check": c.check, "passed": c.passed, "required": c.required, "detail": c.detail}
                for c in self.checks]


def evidence_of(question: dict) -> list[dict]:
    """What a quotation must come from: the passages; for a task without passages (math,
    multiple choice) the problem statement with its options, which the resolver is shown as
    the question. A quote then ties a repair to the problem's own givens."""
    if question["context"]:
        return question["context"]
    return [{"title": "Problem", "sentences": question_text(question).split("\n")}]


def commit_guard(policy: str, question: dict, repair: Repair, min_quote_words: int, relation: str = "lexical",
                 model_verdict: str | None = None) -> GuardResult:
    """Run every check; admit by ``policy`` and ``relation`` (see the module docstring).
    ``model_verdict`` is the backbone's parsed yes/no (None: not asked)."""
    if policy not in REQUIRED:
        raise ValueError(f"unknown commit policy {policy!r}; expected one of {POLICIES}")
    if relation not in RELATION_MODES:
        raise ValueError(f"unknown relation check {relation!r}; expected one of {RELATION_MODES}")
    outcomes = {
        "concrete": check_concrete(repair),
        "subject": check_subject(question["question"], repair.nodes),
        "relation": check_relation(question["question"], repair.nodes),
        "relation_model": check_relation_model(model_verdict),
        "evidence": check_evidence(repair.quotes, evidence_of(question), min_quote_words),
    }
    required = REQUIRED[policy][relation]
    checks = [Check(name, ok, name in required, detail) for name, (ok, detail) in outcomes.items()]
    return GuardResult(policy, all(c.passed for c in checks if c.required), checks)
