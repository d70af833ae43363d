"""Local debate (paper §3.3, eq. 2).

Positions start at the witness claims, p_i^(0) = z_{i,t_i}. In each of R rounds every
agent sees (q, x, P), its own segment S_i, the conflict δ, its own position and the
OTHER agents' positions from the previous round (never the same round), and defends
or revises its position in free text at its own temperature. One batch per round (per set of
weights when a society's members sit on perturbed ones).

With a selected society (``lmad+ac-greedy``; docs/methods.md "Coverage-selected societies") an item's
agents are its ``members``: agent i speaks at member i's temperature, under its persona and
variant (``societies.member_prompt``, role ``debater``), through the backend of its weights.

A reply's position is the text after its last ``Position:`` marker (``"marker"``);
without one, its last non-empty line (``"last_line"``); an empty reply keeps the
previous position (``"kept_previous"``).
"""
from __future__ import annotations

import re
from dataclasses import replace

from ...backends import Backend, ChatRequest
from ...backends.batch import generate_by_backend
from ...prompts import Prompt, format_committed, question_fields
from ...societies import member_prompt
from ...solver import derive_seed
from ...tones import with_tone
from ...call_accounting import call_columns
from .nodes import format_chain

_MARKER = re.compile(r"position\s*[:：]", re.IGNORECASE)


def debate_seed(seed: int, qid: str, iteration: int, rnd: int, agent: int) -> int:
    return derive_seed(seed, qid, iteration, rnd, agent)


def debate_request(prompt: Prompt, question: dict, committed: list[str], segment: list[str], conflict: str,
                   position: str, others: dict[int, str], agent: int, temperature: float, seed: int,
                   max_tokens: int) -> ChatRequest:
    """``agent`` and the keys of ``others`` are zero-based; prompts number agents from 1."""
    messages = prompt.render(
        **question_fields(question), committed=format_committed(committed), agent=str(agent + 1), segment=format_chain(segment),
        conflict=conflict, position=position,
        others="\n".join(f"  Agent {j + 1}: {p}" for j, p in sorted(others.items())))
    return ChatRequest(messages=messages, temperature=float(temperature), max_tokens=max_tokens, seed=seed,
                       role="debater")


def parse_position(text: str, previous: str) -> tuple[str, str]:
    """(position, source); see the module docstring."""
    marks = list(_MARKER.finditer(text or ""))
    if marks:
        rest = text[marks[-1].end():].strip()
        line = next((ln.strip() for ln in rest.splitlines() if ln.strip()), "")
        if line:
            return line, "marker"
    lines = [ln.strip() for ln in (text or "").splitlines() if ln.strip()]
    if lines:
        return lines[-1], "last_line"
    return previous, "kept_previous"


def run_debate(backend: Backend, prompt: Prompt, items: list[dict], iteration: int, rounds: int,
               temperatures: list[float], seed: int, max_tokens: int) -> list[list[dict]]:
    """R rounds for every item (question, committed, segments, conflict, witness_claims, and
    optionally ``tone``: the instruction of a toned method, lmad.tones, appended to every turn's
    system message; ``members``: a society's agents, lmad.protocols.debate.engine.Member, which
    replace ``temperatures`` and ``backend`` for that item) at once: ONE batch per round over all
    items x agents (one per set of weights). Returns each item's ``positions`` rows (items may
    repeat a qid: one per LMAD policy sharing the job)."""
    positions = [list(it["witness_claims"]) for it in items]
    rows: list[list[dict]] = [[] for _ in items]
    voiced: dict[str, Prompt] = {}  # a member's debater prompt, built once per pool agent

    def agents_of(it: dict) -> list[tuple[float, Prompt, Backend]]:
        if not it.get("members"):
            return [(float(t), prompt, backend) for t in temperatures]
        for m in it["members"]:
            voiced.setdefault(m.agent.name, member_prompt(prompt, "debater", m.agent))
        return [(m.agent.temperature, voiced[m.agent.name], m.backend) for m in it["members"]]

    for rnd in range(1, rounds + 1):
        jobs = []
        for n, it in enumerate(items):
            prev = positions[n]
            for agent, (temperature, ask, weights) in enumerate(agents_of(it)):
                s = debate_seed(seed, it["qid"], iteration, rnd, agent)
                others = {j: p for j, p in enumerate(prev) if j != agent}
                req = debate_request(ask, it["question"], it["committed"], it["segments"][agent],
                                     it["conflict"], prev[agent], others, agent, temperature, s, max_tokens)
                if it.get("tone"):
                    req = replace(req, messages=with_tone(req.messages, it["tone"], question_fields(it["question"])))
                jobs.append((n, {"qid": it["qid"], "iteration": iteration, "round": rnd, "agent": agent,
                                 "temperature": float(temperature), "seed": s}, req, weights))
        # without a society: one batch on ``backend``, exactly as before
        completions = generate_by_backend([(weights, req) for _, _, req, weights in jobs])
        new = [list(p) for p in positions]
        for (n, ident, _, _), c in zip(jobs, completions):
            position, source = parse_position(c.text, positions[n][ident["agent"]])
            new[n][ident["agent"]] = position
            rows[n].append(ident | {"position": position, "position_source": source, "response": c.text,
                                    **call_columns(c)})
        positions = new  # the next round sees this round's positions only now
    return rows
