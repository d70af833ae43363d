"""Indexed conflict localization (paper §3.2, eq. 1).

The localizer L sees (q, x, P) and every agent's numbered chain with its answer, and
returns, at temperature 0 under a JSON constraint,
``{"conflict": δ, "witness": [t_1, ..., t_K]}``: the earliest cross-agent conflict and,
per agent, the ONE-BASED index of the first node of that agent's chain that expresses
or gives rise to it. The debated segment is the prefix S_i = chain_i[:t_i].

Validation and fallbacks (recorded per agent in ``witness_fallback``; "" = valid):

``unparseable``  the output is not a JSON object → every agent falls back, and δ
                 becomes the generic "the agents' final answers differ";
``missing``      no ``witness`` list → every agent falls back;
``wrong_count``  the list does not have exactly K entries → every agent falls back
                 (entries cannot be matched to agents);
``not_integer``  this agent's entry is not a JSON integer (booleans, floats and
                 numeric strings are not integers);
``out_of_range`` this agent's entry is not in 1..len(chain_i).

A falling-back agent's witness is its LAST node, the answer-bearing one: the answers
are known to differ, so the last nodes certainly take part in the conflict. A missing
or blank ``conflict`` alone becomes the generic δ (``conflict_fallback``).
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

from ...backends import ChatRequest
from ...model_json import load_model_json
from ...prompts import Prompt, format_committed, question_fields
from .nodes import format_chain

GENERIC_CONFLICT = "the agents' final answers differ"
CONFLICT_MAX_CHARS = 300


@dataclass
class Localization:
    conflict: str
    witness: list[int]            # one-based, one per agent
    witness_fallback: list[str]   # per agent: "" or the reason the last node was used
    conflict_fallback: bool
    parse_error: str


def localization_schema(chain_lengths: list[int]) -> dict:
    """Exactly K integers in 1..longest chain; the per-agent bound is checked on parse."""
    return _localization_schema(len(chain_lengths), max(chain_lengths))


# one dict per shape, shared by every request of that shape and never changed (ChatRequest is
# frozen): the call key memoizes a constraint's JSON by identity (lmad.backends.base)
@functools.lru_cache(maxsize=256)
def _localization_schema(k: int, longest: int) -> dict:
    return {
        "type": "object",
        "properties": {
            "conflict": {"type": "string", "maxLength": CONFLICT_MAX_CHARS},
            "witness": {"type": "array", "minItems": k, "maxItems": k,
                        "items": {"type": "integer", "minimum": 1, "maximum": longest}},
        },
        "required": ["conflict", "witness"],
        "additionalProperties": False,
    }


def format_chains(chains: list[list[str]], answers: list[str]) -> str:
    return "\n\n".join(f"Agent {i} (answer: {a or 'none'}):\n{format_chain(c)}"
                       for i, (c, a) in enumerate(zip(chains, answers), 1))


def localization_request(prompt: Prompt, question: dict, committed: list[str], chains: list[list[str]],
                         answers: list[str], max_tokens: int) -> ChatRequest:
    messages = prompt.render(**question_fields(question), committed=format_committed(committed),
                             chains=format_chains(chains, answers), n_agents=str(len(chains)))
    return ChatRequest(messages=messages, temperature=0.0, max_tokens=max_tokens, seed=0,
                       constraint={"json": localization_schema([len(c) for c in chains])}, role="localizer")


def parse_localization(text: str, chain_lengths: list[int]) -> Localization:
    k = len(chain_lengths)
    last = list(chain_lengths)
    data, error = load_model_json(text)
    if not error and not isinstance(data, dict):
        error = "not a JSON object"
    if error:
        return Localization(GENERIC_CONFLICT, last, ["unparseable"] * k, True, error)

    conflict = data.get("conflict")
    conflict_ok = isinstance(conflict, str) and bool(conflict.strip())
    conflict = " ".join(conflict.split()) if conflict_ok else GENERIC_CONFLICT
    witness = data.get("witness")
    if not isinstance(witness, list):
        return Localization(conflict, last, ["missing"] * k, not conflict_ok, 'no "witness" list')
    if len(witness) != k:
        return Localization(conflict, last, ["wrong_count"] * k, not conflict_ok,
                            f"witness has {len(witness)} entries for {k} agents")
    indices, reasons = [], []
    for t, n in zip(witness, chain_lengths):
        if not isinstance(t, int) or isinstance(t, bool):
            reason = "not_integer"
        else:
            reason = "" if 1 <= t <= n else "out_of_range"
        indices.append(n if reason else t)
        reasons.append(reason)
    return Localization(conflict, indices, reasons, not conflict_ok, "")


def segments(chains: list[list[str]], witness: list[int]) -> list[list[str]]:
    """S_i: the prefix of chain i ending at its witness node."""
    return [chain[:t] for chain, t in zip(chains, witness)]


def localization_row(qid: str, iteration: int, chains: list[list[str]], loc: Localization, raw: str) -> dict:
    return {"qid": qid, "iteration": iteration, "conflict": loc.conflict, "conflict_fallback": loc.conflict_fallback,
            "witness": loc.witness, "witness_fallback": loc.witness_fallback,
            "witness_claims": [c[t - 1] for c, t in zip(chains, loc.witness)],
            "segments": segments(chains, loc.witness), "raw_output": raw, "parse_error": loc.parse_error,
            # the graph localizer's columns (graph_localize), read the same way for a chain
            "witnesses": [[t] for t in loc.witness], "segment_indices": [list(range(1, t + 1)) for t in loc.witness],
            "conflicts": [loc.conflict]}
