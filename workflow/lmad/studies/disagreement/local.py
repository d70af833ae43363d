"""LMAD's local debate under the disagreement layers: every turn rebuilt from its stage tables.

A local-debate turn's request is a pure function of the iteration's localization (segments,
conflict, witness claims), the committed state entering the iteration and the previous
round's positions (``local_debate.debate_request``; round 1 starts at the witness claims),
plus the tone of a toned method. ``local_turns`` rebuilds exactly that request beside the
reply, so layer A asks its self-report in the turn's own conversation without the local
debate having to change, and layer B reads the same parent the debater saw: the other
agents' previous positions.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import replace
from typing import Callable, Mapping, Sequence

from lmad.prompts import Prompt, question_fields
from lmad.protocols.localized_debate.local_debate import debate_request
from lmad.tones import with_tone
from lmad.studies.disagreement.pushback import parent_text


def local_turns(prompt: Prompt | None, tone: str, questions: Mapping[str, dict], committed: Mapping[str, list[str]],
                localizations: Sequence[dict], positions: Sequence[dict], max_tokens: int,
                voice: Callable[[int, Prompt], Prompt] | None = None) -> list[dict]:
    """One entry per ``lmad_positions`` row: ``qid, iteration, round, agent, temperature, seed,
    request`` (as the local debate sent it; None without a ``prompt``; ``voice(agent, prompt)``:
    agent's own debater prompt, a society member's persona), ``untoned`` (the same
    request with the tone instruction deleted: layer C's re-ask), ``reply``, ``parent`` and ``own``
    (the agent's previous position); in (qid, round, agent) order."""
    loc = {r["qid"]: r for r in localizations}
    by = defaultdict(dict)
    for r in positions:
        by[(r["qid"], r["round"])][r["agent"]] = r
    out = []
    for (qid, rnd), turns in sorted(by.items()):
        where = loc[qid]
        if rnd == 1:
            prev = dict(enumerate(where["witness_claims"]))
        else:
            prev = {a: r["position"] for a, r in by[(qid, rnd - 1)].items()}
        for a, row in sorted(turns.items()):
            others = {j: p for j, p in prev.items() if j != a}
            ask = voice(a, prompt) if voice and prompt is not None else prompt
            req = None if prompt is None else debate_request(
                ask, questions[qid], list(committed.get(qid) or []), where["segments"][a], where["conflict"],
                prev[a], others, a, row["temperature"], row["seed"], max_tokens)
            untoned = req
            if tone and req is not None:
                req = replace(req, messages=with_tone(req.messages, tone, question_fields(questions[qid])))
            out.append({"qid": qid, "iteration": row["iteration"], "round": rnd, "agent": a,
                        "temperature": float(row["temperature"]), "seed": row["seed"], "request": req,
                        "untoned": untoned,
                        "reply": row["response"], "parent": parent_text(others), "own": prev[a]})
    return out
