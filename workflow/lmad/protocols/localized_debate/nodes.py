"""Reasoning nodes (paper §3.1): a rationale becomes an ordered chain of atomic claims.

The extractor E sees the question and one agent's rationale and answers, at
temperature 0 and under a JSON-schema constraint, ``{"claims": [string, ...]}``. The
agent's answer is carried from its solver sample, never from the extractor, so
structural parsing cannot rewrite an answer.

Quality check. Every node the extractor returned ("raw node") gets a list of flags:

``empty``      blank, or nothing but punctuation;
``repeated``   the same text (HotpotQA normalization) as an earlier node of the chain;
``over_long``  more than ``max_words`` words;
``malformed``  not a JSON string (its JSON text is kept as the node text);
``excess``     beyond the first ``max_nodes`` nodes.

Nodes flagged ``empty``, ``repeated``, ``malformed`` or ``excess`` are dropped.
``over_long`` nodes are kept and only flagged: a long node usually packs several
claims, and dropping it could delete the very step the agents disagree on.

A failing chain falls back, and the fallback is recorded:

1. the output is not JSON of the shape ``{"claims": [...]}`` (``parse_error`` says
   why), or no node survives the check → ``"sentence_split"``: the rationale split
   into lines and sentences, with the same check (list markers stripped);
2. that is empty too (an empty rationale) → ``"answer_only"``: one node stating the
   answer, so every chain has a last, answer-bearing node.

Parsing is ``json.loads`` plus shape checks; model output is never evaluated.
"""
from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass, field

from ...answers.text import claim_key
from ...backends import ChatRequest
from ...model_json import load_model_json
from ...prompts import Prompt

FLAGS = ("empty", "repeated", "over_long", "malformed", "excess")
DROPPED = frozenset({"empty", "repeated", "malformed", "excess"})
SENTENCE_SPLIT, ANSWER_ONLY = "sentence_split", "answer_only"
# characters a node may hold under the JSON constraint, per allowed word
CHARS_PER_WORD = 10


@functools.lru_cache(maxsize=64)  # one dict per shape, shared by its requests: the call key memoizes its JSON by identity
def extraction_schema(max_nodes: int, max_words: int) -> dict:
    return {
        "type": "object",
        "properties": {"claims": {"type": "array", "minItems": 1, "maxItems": max_nodes,
                                  "items": {"type": "string", "maxLength": max_words * CHARS_PER_WORD}}},
        "required": ["claims"],
        "additionalProperties": False,
    }


def extraction_request(prompt: Prompt, question: str, rationale: str, max_tokens: int, max_nodes: int,
                       max_words: int) -> ChatRequest:
    return ChatRequest(messages=prompt.render(question=question, rationale=rationale), temperature=0.0,
                       max_tokens=max_tokens, seed=0, constraint={"json": extraction_schema(max_nodes, max_words)},
                       role="extractor")


def parse_claims(text: str) -> tuple[list, str]:
    """The extractor's claim list as parsed JSON values, and a parse error ("" if none)."""
    data, error = load_model_json(text)
    if error:
        return [], error
    if not isinstance(data, dict) or not isinstance(data.get("claims"), list):
        return [], 'not an object with a "claims" list'
    return data["claims"], ""


def quality_flags(items: list, max_nodes: int, max_words: int) -> tuple[list[str], list[list[str]]]:
    """Node texts and their flags, in order (see the module docstring)."""
    texts, flags, seen = [], [], set()
    for i, item in enumerate(items):
        f = []
        if isinstance(item, str):
            text = " ".join(item.split())
        else:
            text = json.dumps(item, ensure_ascii=False)
            f.append("malformed")
        key = claim_key(text)
        if not key:
            f.append("empty")
        elif key in seen:
            f.append("repeated")
        seen.add(key)
        if len(text.split()) > max_words:
            f.append("over_long")
        if i >= max_nodes:
            f.append("excess")
        texts.append(text)
        flags.append(f)
    return texts, flags


_LIST_MARKER = re.compile(r"^\s*(?:(?:[-*•]+|\d+[.)]|step\s+\d+\s*[:.)])\s+)+", re.IGNORECASE)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"“'(\[]?[A-Z0-9])")


def split_sentences(text: str) -> list[str]:
    """Lines, then sentences (a ``.``/``!``/``?`` before a capital or digit); list
    markers stripped. Deliberately simple: it only feeds a fallback."""
    out = []
    for line in text.splitlines():
        line = _LIST_MARKER.sub("", line).strip()
        out.extend(s.strip() for s in _SENTENCE_END.split(line) if s.strip())
    return out


def answer_node(answer: str) -> str:
    return f"The answer is {answer}." if answer.strip() else "The agent gave no answer."


@dataclass
class ClaimChain:
    nodes: list[str]                  # the chain used downstream (Z_i)
    raw_nodes: list[str] = field(default_factory=list)
    node_flags: list[list[str]] = field(default_factory=list)
    parse_error: str = ""
    fallback: str = ""                # "" | "sentence_split" | "answer_only"


def build_chain(output: str, rationale: str, answer: str, max_nodes: int, max_words: int) -> ClaimChain:
    """Parse the extractor's output, run the quality check, and fall back if needed."""
    items, error = parse_claims(output)
    raw, flags = quality_flags(items, max_nodes, max_words)
    nodes = [t for t, f in zip(raw, flags) if not DROPPED.intersection(f)]
    if nodes:
        return ClaimChain(nodes, raw, flags, error)
    split, split_flags = quality_flags(split_sentences(rationale), max_nodes, max_words)
    nodes = [t for t, f in zip(split, split_flags) if not DROPPED.intersection(f)]
    if nodes:
        return ClaimChain(nodes, raw, flags, error, SENTENCE_SPLIT)
    return ClaimChain([answer_node(answer)], raw, flags, error, ANSWER_ONLY)


def format_chain(nodes: list[str], indent: str = "  ") -> str:
    """Numbered claims; the numbers are the one-based indices the localizer returns."""
    return "\n".join(f"{indent}{t}. {node}" for t, node in enumerate(nodes, 1))
