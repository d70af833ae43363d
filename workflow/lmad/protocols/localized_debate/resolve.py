"""Resolution (paper §3.3, eq. 3).

A zero-temperature resolver Φ sees (q, x, P, δ) and the agents' final positions and
proposes a repair under a JSON constraint: ``{"nodes": Ẑ, "quotes": Q̂}`` — one or more
replacement nodes and the context quotations that support them.

Parsing (json.loads + shape checks) keeps string items, whitespace-collapsed, and drops
blank and non-string items; every problem is noted in ``parse_error``. ``shape_ok``
says whether the output was an object with a ``nodes`` list at all — the commit guard's
"concrete" check needs that plus at least one node.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field

from ...backends import ChatRequest
from ...model_json import load_model_json
from ...prompts import Prompt, format_committed, question_fields

MAX_NODES, MAX_QUOTES, MAX_CHARS = 2, 3, 400
# A maximal reply must fit the budget, or the constraint cannot finish and the reply is cut
# (finish reason "length", stop ``resolver_truncated``): at a conservative 3 characters per
# token, minus the JSON frame, shared by every item the schema allows.
CHARS_PER_TOKEN, FRAME_CHARS, ITEM_FRAME_CHARS, MIN_ITEM_CHARS = 3, 30, 4, 24


@dataclass
class Repair:
    nodes: list[str] = field(default_factory=list)
    quotes: list[str] = field(default_factory=list)
    parse_error: str = ""
    shape_ok: bool = False


def item_chars(max_tokens: int) -> int:
    """Longest node or quotation such that a reply with every item at its longest fits the budget."""
    items = MAX_NODES + MAX_QUOTES
    per_item = (CHARS_PER_TOKEN * max_tokens - FRAME_CHARS - ITEM_FRAME_CHARS * items) // items
    return max(MIN_ITEM_CHARS, min(MAX_CHARS, per_item))


@functools.lru_cache(maxsize=64)  # one dict per shape, shared by its requests: the call key memoizes its JSON by identity
def resolution_schema(max_tokens: int) -> dict:
    chars = item_chars(max_tokens)

    def strings(lo: int, hi: int) -> dict:
        return {"type": "array", "minItems": lo, "maxItems": hi, "items": {"type": "string", "maxLength": chars}}

    return {"type": "object", "properties": {"nodes": strings(1, MAX_NODES), "quotes": strings(1, MAX_QUOTES)},
            "required": ["nodes", "quotes"], "additionalProperties": False}


def format_positions(positions: list[str]) -> str:
    return "\n".join(f"  Agent {i}: {p}" for i, p in enumerate(positions, 1))


def resolution_request(prompt: Prompt, question: dict, committed: list[str], conflict: str, positions: list[str],
                       max_tokens: int) -> ChatRequest:
    messages = prompt.render(**question_fields(question), committed=format_committed(committed), conflict=conflict,
                             positions=format_positions(positions))
    return ChatRequest(messages=messages, temperature=0.0, max_tokens=max_tokens, seed=0,
                       constraint={"json": resolution_schema(max_tokens)}, role="resolver")


def _strings(value, name: str, problems: list[str]) -> list[str]:
    if not isinstance(value, list):
        problems.append(f'no "{name}" list')
        return []
    out = []
    for i, item in enumerate(value):
        if not isinstance(item, str):
            problems.append(f"{name}[{i}] is not a string")
        elif item.strip():
            out.append(" ".join(item.split()))
    return out


def parse_repair(text: str) -> Repair:
    data, error = load_model_json(text)
    if error:
        return Repair(parse_error=error)
    if not isinstance(data, dict):
        return Repair(parse_error="not a JSON object")
    problems: list[str] = []
    nodes = _strings(data.get("nodes"), "nodes", problems)
    quotes = _strings(data.get("quotes"), "quotes", problems)
    return Repair(nodes, quotes, "; ".join(problems), isinstance(data.get("nodes"), list))
