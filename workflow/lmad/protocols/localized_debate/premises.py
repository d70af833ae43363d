"""Extraction with premises (graph LMAD, ``lmad-dag``): a rationale becomes a DAG of claims.

The premise extractor sees the question, the numbered passage titles and one agent's
rationale, and answers at temperature 0 under a JSON-schema constraint::

    {"claims": [{"claim": str, "premises": [int, ...], "source": int}, ...]}

``premises``: the one-based numbers of the EARLIER claims this claim relies on;
``source``: the number of the passage a claim states a fact from (0: none; a task without
passages has only 0). The agent's answer is carried from its solver sample, as in the chain.

The claim texts go through the chain's quality check (``nodes.quality_flags``). A dropped
claim's number is remapped so later premises keep their meaning: a ``repeated`` claim stands
for its first occurrence; an ``empty`` or ``malformed`` one for its own premises. The schema
gives each position its own item schema, so claim k's premises can name only claims 1..k-1
(under one item schema for every position SmolLM2 writes ``"premises": [1, 2, 3]`` under
each claim, a cycle). A backend may ignore the constraint, so the graph is still validated,
and any failure is a recorded fallback to the chain (claim t rests on claim t − 1: the
premise closure is then the chain prefix, exactly chain LMAD's segment). ``graph_fallback``
(checked in this order):

``unparsable``        the reply is not ``{"claims": [objects with a "claim" string, a
                      "premises" list of integers and an integer "source"]}``, or the
                      chain itself fell back (``nodes``: sentence_split / answer_only);
``dangling premise``  a premise number names no claim of the reply;
``cycle``             a claim relies on itself, directly or through later claims;
``forward premise``   acyclic, but a claim relies on a later one.

A ``source`` outside 0..passages is set to 0 and noted in ``detail``; it is no fallback.
Parsing never raises (``nodes.parse_claims`` plus shape checks).

The schema is sized to the extractor's token budget (``premise_limits``): a constrained reply
that is cut at ``max_tokens`` cannot close its JSON, so a schema allowing more than fits
(12 claims of 400 characters at a 192-token budget) turns a repeating model's every reply
into ``unparsable``. Measured with SmolLM2's tokenizer: the outer frame costs 6 tokens and
each claim's frame (keys, three premises, a two-digit source) 25, so at 192 tokens the
schema allows 4 claims of at most 60 characters.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache

from ...answers.text import claim_key
from ...backends import ChatRequest
from ...prompts import Prompt
from .nodes import CHARS_PER_WORD, DROPPED, ClaimChain, build_chain, parse_claims
from .resolve import CHARS_PER_TOKEN

UNPARSABLE, DANGLING, CYCLE, FORWARD = "unparsable", "dangling premise", "cycle", "forward premise"
GRAPH_FALLBACKS = (UNPARSABLE, DANGLING, CYCLE, FORWARD)
MAX_PREMISES = 3  # per claim: keeps a maximal reply short; a claim resting on more is rare
# tokens of the {"claims": [...]} frame and of one claim object's keys, premises and source
# (SmolLM2 tokenizer, compact separators: measured 6 and 25, each with a margin), and the
# shortest claim worth a node
FRAME_TOKENS, CLAIM_FRAME_TOKENS, MIN_CLAIM_CHARS = 8, 26, 60


def premise_limits(max_tokens: int, max_nodes: int, max_words: int) -> tuple[int, int]:
    """(claims, characters per claim) such that a reply with every claim at its longest fits
    ``max_tokens`` at ``CHARS_PER_TOKEN``: as many claims as keep each at least
    ``MIN_CLAIM_CHARS`` long (never fewer than 1, never more than ``max_nodes``)."""
    room = max(0, max_tokens - FRAME_TOKENS)
    per_claim = CLAIM_FRAME_TOKENS + -(-MIN_CLAIM_CHARS // CHARS_PER_TOKEN)
    claims = max(1, min(max_nodes, room // per_claim))
    chars = CHARS_PER_TOKEN * (room // claims - CLAIM_FRAME_TOKENS)
    return claims, max(1, min(max_words * CHARS_PER_WORD, chars))


@lru_cache(maxsize=256)
def premise_schema(max_tokens: int, max_nodes: int, max_words: int, n_passages: int) -> dict:
    """One item schema per position (``prefixItems``): claim k may name only claims 1..k-1, so a
    constrained reply points backwards and cannot close a cycle. One shared dict per shape (read
    only): building it per call was a tenth of an extraction job."""
    claims, chars = premise_limits(max_tokens, max_nodes, max_words)

    def claim(k: int) -> dict:
        premises = {"type": "array", "maxItems": min(MAX_PREMISES, k - 1)}
        if k > 1:
            premises["items"] = {"type": "integer", "minimum": 1, "maximum": k - 1}
        return {"type": "object",
                "properties": {"claim": {"type": "string", "maxLength": chars}, "premises": premises,
                               "source": {"type": "integer", "minimum": 0, "maximum": n_passages}},
                "required": ["claim", "premises", "source"], "additionalProperties": False}

    return {"type": "object",
            "properties": {"claims": {"type": "array", "minItems": 1, "maxItems": claims,
                                      "prefixItems": [claim(k) for k in range(1, claims + 1)], "items": False}},
            "required": ["claims"], "additionalProperties": False}


def passage_titles(context: list[dict]) -> str:
    """Numbered titles only: a source needs the number, and whole passages would multiply the
    extractor's prompt (the rationale already says which facts it used)."""
    if not context:
        return "(none: use source 0)"
    return "\n".join(f"[{i}] {p['title']}" for i, p in enumerate(context, 1))


def premise_request(prompt: Prompt, question: dict, rationale: str, max_tokens: int, max_nodes: int,
                    max_words: int) -> ChatRequest:
    context = question.get("context") or []
    messages = prompt.render(question=question["question"], rationale=rationale, titles=passage_titles(context))
    return ChatRequest(messages=messages, temperature=0.0, max_tokens=max_tokens, seed=0,
                       constraint={"json": premise_schema(max_tokens, max_nodes, max_words, len(context))}, role="extractor")


@dataclass
class ClaimGraph:
    chain: ClaimChain                                   # the kept claims (nodes) and the chain's record
    premises: list[list[int]] = field(default_factory=list)  # per node: one-based earlier nodes
    sources: list[int] = field(default_factory=list)    # per node: one-based passage, 0 = none
    fallback: str = ""                                  # "" or one of GRAPH_FALLBACKS
    detail: str = ""


def chain_premises(n: int) -> list[list[int]]:
    """The chain as a graph: claim t rests on claim t − 1."""
    return [[t - 1] if t > 1 else [] for t in range(1, n + 1)]


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _shape_error(items: list) -> str:
    """Why the parsed claim objects are unusable ("" if they are not)."""
    for i, it in enumerate(items, 1):
        if not isinstance(it, dict) or not isinstance(it.get("claim"), str):
            return f'claim {i} is not an object with a "claim" string'
        if not isinstance(it.get("premises"), list) or not all(map(_is_int, it["premises"])):
            return f'claim {i}: "premises" is not a list of integers'
        if not _is_int(it.get("source")):
            return f'claim {i}: "source" is not an integer'
    return ""


def _has_cycle(edges: dict[int, set[int]]) -> bool:
    """Whether the graph t -> its premises has a cycle (iterative three-colour DFS)."""
    state: dict[int, int] = {}
    for start in edges:
        if state.get(start):
            continue
        stack = [(start, iter(sorted(edges[start])))]
        state[start] = 1
        while stack:
            node, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                state[node] = 2
                stack.pop()
            elif state.get(nxt) == 1:
                return True
            elif not state.get(nxt):
                state[nxt] = 1
                stack.append((nxt, iter(sorted(edges.get(nxt, ())))))
    return False


def _validate(items: list[dict]) -> tuple[str, str]:
    """(fallback, detail) of the raw premise lists: "" when every premise points backwards."""
    n = len(items)
    for t, it in enumerate(items, 1):
        bad = [p for p in it["premises"] if not 1 <= p <= n]
        if bad:
            return DANGLING, f"claim {t} cites {bad[0]} (the reply has {n} claims)"
    edges = {t: set(it["premises"]) for t, it in enumerate(items, 1)}
    if _has_cycle(edges):
        loop = next(t for t in edges if any(p >= t for p in edges[t]))
        return CYCLE, f"claim {loop} cites claim {max(edges[loop])}, and the premises close a circle"
    t = next((t for t in edges if any(p > t for p in edges[t])), None)
    if t is not None:
        return FORWARD, f"claim {t} cites the later claim {max(edges[t])}"
    return "", ""


def build_graph(output: str, rationale: str, answer: str, max_nodes: int, max_words: int,
                n_passages: int) -> ClaimGraph:
    """Parse, quality-check and validate the premise extractor's reply (module docstring)."""
    items, parse_error = parse_claims(output)
    shape_error = parse_error or _shape_error(items)
    texts = [it.get("claim") if isinstance(it, dict) and isinstance(it.get("claim"), str) else it for it in items]
    # the chain's parse, check and fallbacks over the claim texts (a non-string item is malformed);
    # a reply that is no {"claims": [...]} goes to it unchanged, for the chain's own fallbacks
    claims_json = output if parse_error else json.dumps({"claims": texts}, ensure_ascii=False)
    chain = build_chain(claims_json, rationale, answer, max_nodes, max_words)
    if shape_error:
        chain.parse_error = chain.parse_error or shape_error
    n = len(chain.nodes)
    if chain.fallback or shape_error:
        return ClaimGraph(chain, chain_premises(n), [0] * n, UNPARSABLE, shape_error or chain.parse_error
                          or f"no usable claim ({chain.fallback})")
    fallback, detail = _validate(items)
    premises, sources, notes = _remap(items, chain.node_flags, chain.raw_nodes, n_passages)
    if fallback:
        return ClaimGraph(chain, chain_premises(n), sources, fallback, detail)
    return ClaimGraph(chain, premises, sources, "", "; ".join(notes))


def _remap(items: list[dict], flags: list[list[str]], raw: list[str], n_passages: int
           ) -> tuple[list[list[int]], list[int], list[str]]:
    """Premises over the kept nodes (one-based), and each kept node's source, with notes."""
    alias: dict[int, set[int]] = {}  # raw claim number -> the kept nodes it stands for
    first: dict[str, set[int]] = {}  # normalized text -> its first kept node
    premises, sources, notes = [], [], []
    for t, (it, f) in enumerate(zip(items, flags), 1):
        backward = [p for p in it["premises"] if p < t]  # a valid graph has no other kind
        stands_for = set().union(*(alias.get(p, set()) for p in backward)) if backward else set()
        if DROPPED.intersection(f):
            if "repeated" in f:
                stands_for = first.get(claim_key(raw[t - 1]), stands_for)
            alias[t] = stands_for
            continue
        k = len(premises) + 1
        premises.append(sorted(stands_for))
        source = it["source"]
        if not 0 <= source <= n_passages:
            notes.append(f"claim {t}: source {source} is not a passage (0..{n_passages}); set to 0")
            source = 0
        sources.append(source)
        alias[t] = {k}
        first.setdefault(claim_key(raw[t - 1]), {k})
    return premises, sources, notes


def closure(premises: list[list[int]], node: int) -> list[int]:
    """The premise closure of one-based ``node``: itself and every claim it rests on, ascending."""
    seen, todo = set(), [node]
    while todo:
        t = todo.pop()
        if t in seen or not 1 <= t <= len(premises):
            continue
        seen.add(t)
        todo.extend(premises[t - 1])
    return sorted(seen)


def depths(premises: list[list[int]]) -> list[int]:
    """Per node, the longest premise path down to a root (a root: 0); premises point backwards."""
    out: list[int] = []
    for ps in premises:
        out.append(1 + max((out[p - 1] for p in ps if 1 <= p <= len(out)), default=-1))
    return out
