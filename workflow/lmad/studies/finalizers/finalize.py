"""Finalizers: how a set of agents' answers becomes one answer (When Debate Helps).

A debating method's answer is a readout of its agents' answers. Applied to every saved round
(R0, R1, …; LMAD: every iteration) of every method, the same finalizer separates what the
interaction gained from what the readout gained (round-level controls):

``vote``        majority vote, answers grouped by the question's answer type (normalized form
                for spans, equivalent numbers / expressions / option letters otherwise); ties go
                to the tied answer given first by the lowest-index agent
                (``answers.majority_vote``).
``vote_judge``  majority vote; when there is no unique winner, ONE judge call (temperature 0,
                output constrained to the tied answers) picks among the tied candidates.
                A reply that is not exactly one tied candidate (after stripping; or, failing
                that, the canonical form of exactly one) falls back to the tie rule, recorded.
``lvd``         verification-aware readout (Latent Verification Debate): each distinct
                candidate gets ONE verifier call (temperature 0, JSON ``{"supported": bool,
                "quote": str}``); its evidence e_c = 1 when the verifier says supported AND the
                quotation is verbatim in one passage of the context, or in the problem and its
                options for a task without passages (the LMAD commit guard's ``evidence_of`` and
                ``find_quote``, ≥ ``min_quote_words`` words), else 0. The readout scores
                s_c = n_c + λ·e_c (n_c: proposal count; λ: ``lvd_weight``) — the ranking of the
                LVD posterior mean (α + n_c + λ·e_c) / Σ under a symmetric Dirichlet prior — and
                picks the highest score, ties in score broken by the vote order. With one
                distinct candidate nothing can change: no call is made. An unparsable reply
                is e_c = 0, recorded.

Every parser takes untrusted text through ``model_json.load_model_json`` and never raises.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from lmad.answers import equivalent, group_keys, key_of, majority_vote, type_of
from lmad.backends import ChatRequest
from lmad.model_json import load_model_json
from lmad.prompts import Prompt, question_fields
from lmad.protocols.localized_debate.commit_guard import evidence_of, find_quote

FINALIZERS = ("vote", "vote_judge", "lvd")
#: how a finalized answer was reached (``finalized.source``)
SOURCES = ("vote", "empty", "judge", "judge_fallback", "lvd", "lvd_unchanged")
QUOTE_CHARS = 300  # the verifier's quotation; a maximal reply fits 128 tokens at 3 characters per token


@dataclass(frozen=True)
class Candidate:
    """One distinct non-empty answer of a set: its vote group's key (``answers.group_keys``),
    the original string of its first agent (in agent order), how many agents gave it, and that
    first agent's index."""

    norm: str
    answer: str
    count: int
    first: int


def candidates(answers: Sequence[str], answer_type: str) -> list[Candidate]:
    """Distinct non-empty answers (the vote's groups) in vote order: most votes first, then first
    agent index."""
    groups: dict[str, Candidate] = {}
    for i, (a, norm) in enumerate(zip(answers, group_keys(answers, answer_type))):
        if not norm:
            continue
        c = groups.get(norm)
        groups[norm] = Candidate(norm, a, 1, i) if c is None else Candidate(norm, c.answer, c.count + 1, c.first)
    return sorted(groups.values(), key=lambda c: (-c.count, c.first))


def tied(cands: Sequence[Candidate]) -> list[Candidate]:
    """The candidates that share the top count (one: a unique winner; none: all answers empty)."""
    return [c for c in cands if cands and c.count == cands[0].count]


# ---------------------------------------------------------------------------- requests

def judge_schema(options: Sequence[str]) -> dict:
    return {"choice": list(options)}


def judge_request(prompt: Prompt, question: dict, options: Sequence[str], max_tokens: int) -> ChatRequest:
    listed = "\n".join(f"- {o}" for o in options)
    return ChatRequest(messages=prompt.render(**question_fields(question), candidates=listed),
                       temperature=0.0, max_tokens=max_tokens, seed=0, constraint=judge_schema(options),
                       role="finalizer")


def verifier_schema() -> dict:
    return {"type": "object",
            "properties": {"supported": {"type": "boolean"}, "quote": {"type": "string", "maxLength": QUOTE_CHARS}},
            "required": ["supported", "quote"], "additionalProperties": False}


def verify_request(prompt: Prompt, question: dict, candidate: str, max_tokens: int) -> ChatRequest:
    return ChatRequest(messages=prompt.render(**question_fields(question), candidate=candidate),
                       temperature=0.0, max_tokens=max_tokens, seed=0, constraint={"json": verifier_schema()},
                       role="finalizer")


# ----------------------------------------------------------------------------- parsers

def parse_judge_choice(text, options: Sequence[str], answer_type: str) -> tuple[int | None, str]:
    """The index of the tied candidate the judge picked, or (None, why not). Never raises."""
    if not isinstance(text, str):
        return None, f"not text ({type(text).__name__})"
    said = text.strip()
    for i, o in enumerate(options):
        if said == o:
            return i, ""
    hits = [i for i, o in enumerate(options) if equivalent(said, o, answer_type)]
    if len(hits) == 1:
        return hits[0], ""
    return None, f"reply {said[:80]!r} is not one of the {len(options)} tied candidates"


@dataclass(frozen=True)
class Verification:
    evidence: bool
    supported: bool
    quote: str
    detail: str
    parse_error: str = ""


def parse_verification(text, context: list[dict], min_quote_words: int) -> Verification:
    """``{"supported": bool, "quote": str}`` exactly; evidence needs both the verdict and a
    verbatim quotation. Anything else is no evidence, with the reason. Never raises."""
    obj, error = load_model_json(text)
    if error:
        return Verification(False, False, "", "unparsed", f"invalid JSON: {error}")
    if not isinstance(obj, dict) or set(obj) != {"supported", "quote"}:
        got = sorted(obj) if isinstance(obj, dict) else type(obj).__name__
        return Verification(False, False, "", "unparsed", f"expected the keys ['quote', 'supported'], got {got}")
    if not isinstance(obj["supported"], bool) or not isinstance(obj["quote"], str):
        return Verification(False, False, "", "unparsed", "'supported' must be a boolean and 'quote' a string")
    quote = " ".join(obj["quote"].split())
    if not obj["supported"]:
        return Verification(False, False, quote, "verifier: not supported")
    found, where = find_quote(quote, context, min_quote_words)
    return Verification(found, True, quote, f"quote {where}")


# ----------------------------------------------------------------------------- readout

def lvd_scores(cands: Sequence[Candidate], evidence: Sequence[bool], weight: float) -> list[float]:
    return [c.count + weight * float(e) for c, e in zip(cands, evidence, strict=True)]


def lvd_pick(cands: Sequence[Candidate], evidence: Sequence[bool], weight: float) -> int:
    """Index of the highest score; the first in vote order among equal scores."""
    scores = lvd_scores(cands, evidence, weight)
    return max(range(len(scores)), key=lambda i: (scores[i], -i))


@dataclass
class Ballot:
    """One answer set to finalize: a question's agents' answers after one round of one method."""

    qid: str
    dataset: str
    method: str
    round: int
    answers_round: int
    answers: list[str]
    question: dict
    cands: list[Candidate] = field(init=False)

    def __post_init__(self):
        self.cands = candidates(self.answers, self.answer_type)

    @property
    def answer_type(self) -> str:
        return type_of(self.question)


def needs_judge(b: Ballot) -> bool:
    return len(tied(b.cands)) > 1


def needs_verification(b: Ballot) -> bool:
    return len(b.cands) > 1


def finalize_row(b: Ballot, finalizer: str, replies: dict, weight: float, min_quote_words: int) -> dict:
    """The ``finalized`` row of one ballot under one finalizer. ``replies`` maps the requests
    this ballot needs (``("judge",)`` or ``("verify", i)``) to their completions."""
    vote, info = majority_vote(b.answers, b.answer_type)
    base = {"qid": b.qid, "dataset": b.dataset, "method": b.method, "round": b.round,
            "answers_round": b.answers_round, "finalizer": finalizer, "answers": list(b.answers),
            "candidates": [c.answer for c in b.cands], "counts": [c.count for c in b.cands], "vote": vote,
            "tie": bool(info["tie"]), "evidence": [], "scores": [], "replies": [], "details": [],
            "parse_error": "", "calls": 0, "prompt_tokens": 0, "completion_tokens": 0}
    prediction, source = vote, ("vote" if b.cands else "empty")
    used = []
    if finalizer == "vote_judge" and needs_judge(b):
        options = [c.answer for c in tied(b.cands)]
        reply = replies[("judge",)]
        used.append(reply)
        pick, error = parse_judge_choice(reply.text, options, b.answer_type)
        base["replies"] = [reply.text]
        if pick is None:
            source, base["parse_error"] = "judge_fallback", error
        else:
            prediction, source = options[pick], "judge"
    elif finalizer == "lvd" and needs_verification(b):
        checks = []
        for i, _ in enumerate(b.cands):
            reply = replies[("verify", i)]
            used.append(reply)
            checks.append(parse_verification(reply.text, evidence_of(b.question), min_quote_words))
        evidence = [v.evidence for v in checks]
        pick = lvd_pick(b.cands, evidence, weight)
        prediction = b.cands[pick].answer
        source = "lvd" if b.cands[pick].norm != info["winner_norm"] else "lvd_unchanged"
        base |= {"evidence": evidence, "scores": lvd_scores(b.cands, evidence, weight),
                 "replies": [r.text for r in used], "details": [v.detail for v in checks],
                 "parse_error": "; ".join(f"candidate {i}: {v.parse_error}" for i, v in enumerate(checks)
                                          if v.parse_error)}
    elif finalizer not in FINALIZERS:
        raise ValueError(f"unknown finalizer {finalizer!r}; known: {FINALIZERS}")
    base |= {"prediction": prediction, "prediction_norm": key_of(prediction, b.question), "source": source,
             "calls": len(used), "prompt_tokens": sum(r.prompt_tokens for r in used),
             "completion_tokens": sum(r.completion_tokens for r in used),
             "finish_reasons": [r.finish_reason for r in used]}
    return base
