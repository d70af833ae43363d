"""Graph localization (graph LMAD, ``lmad-dag``): the minimal conflicts of K claim graphs.

Deterministic, no model call: the premises carry the structure the chain localizer is asked
for. Per question, with each agent's claims, premises (``premises.build_graph``) and sources:

1. Alignment. Two claims of different agents agree when their normalized texts are equal,
   or when they state the same numbers and their content words (HotpotQA normalization with
   signs, decimal points and fraction bars kept: ``answers.text.claim_key``; stopwords
   dropped) overlap with Jaccard ≥ ``align_jaccard``. A claim is *agreed* when
   every other agent has a claim that agrees with it. Textual, so a paraphrase of a shared
   fact counts as unshared; a changed number or name never counts as agreement.
2. Candidates. An agent's *relevant* claims are the premise closure of its last claim (the
   conclusion, which the extractor keeps last): an aside the answer does not rest on is no
   conflict. A *minimal conflict* is a relevant claim that is not agreed while every one of
   its premises is — the earliest disagreement in topological order.
3. Conflicts. Candidates are taken in topological order (depth, then agent, then claim); the
   first unused one seeds a conflict, and every other agent contributes its unused candidate
   that best matches it (content-word Jaccard, plus 1 when both cite the same passage). At
   most ``max_conflicts`` conflicts; minimal claims never rest on one another, so they are
   independent. An agent without a candidate for the first conflict takes part with its
   last claim (``witness_fallback`` "no counterpart"); when no agent has a candidate (the
   graphs agree and only the answers differ) every agent does ("no conflicting claim"),
   with the chain localizer's generic conflict.
4. Segments. Agent i's segment is the premise closure of its witnesses (in claim order),
   not the chain prefix; δ names each conflict's competing claims (and their passages).

Several conflicts are debated together in one local debate (δ lists them, a position starts
at the agent's witness claims) and settled by one repair that the guard admits or rejects
as a whole: the stage tables keep one row per question, as for the chain.
"""
from __future__ import annotations

from dataclasses import dataclass

from ...answers.text import claim_key
from .commit_guard import STOPWORDS
from .localize import GENERIC_CONFLICT
from .premises import closure, depths

NO_COUNTERPART, NO_CONFLICT = "no counterpart", "no conflicting claim"


def claim_words(text: str) -> list[str]:
    return [w for w in claim_key(text).split() if w not in STOPWORDS]


def _jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a | b else 0.0


def _numbers(words) -> set[str]:
    return {w for w in words if any(ch.isdigit() for ch in w)}


def agree(a: str, b: str, align_jaccard: float) -> bool:
    """Whether two claims state the same thing (see the module docstring, 1)."""
    if claim_key(a) == claim_key(b):
        return True
    wa, wb = set(claim_words(a)), set(claim_words(b))
    return bool(wa and wb) and _numbers(wa) == _numbers(wb) and _jaccard(wa, wb) >= align_jaccard


@dataclass
class GraphLocalization:
    conflict: str                   # δ: every conflict's description, numbered when several
    conflicts: list[str]            # one description per conflict
    witness: list[int]              # per agent, its first witness (one-based)
    witnesses: list[list[int]]      # per agent, every witness (one per conflict it takes part in)
    witness_fallback: list[str]     # per agent: "" | NO_COUNTERPART | NO_CONFLICT
    segment_indices: list[list[int]]  # per agent, the premise closure of its witnesses
    agreed: list[list[bool]]        # per agent and claim: has a counterpart in every other agent


def agreed_claims(chains: list[list[str]], align_jaccard: float) -> list[list[bool]]:
    return [[all(any(agree(z, u, align_jaccard) for u in other) for j, other in enumerate(chains) if j != i)
             for z in chain] for i, chain in enumerate(chains)]


def minimal_conflicts(premises: list[list[int]], agreed: list[bool]) -> list[int]:
    """One agent's minimal conflicts, one-based, in topological order (depth, claim)."""
    if not premises:
        return []
    relevant = closure(premises, len(premises))
    depth = depths(premises)
    found = [t for t in relevant if not agreed[t - 1] and all(agreed[p - 1] for p in premises[t - 1])]
    return sorted(found, key=lambda t: (depth[t - 1], t))


def _describe(chains: list[list[str]], sources: list[list[int]], members: dict[int, int], align_jaccard: float) -> str:
    """'Agent 1 states "…" (passage 2); agents 2 and 3 state "…"', agents that agree grouped."""
    groups: list[tuple[list[int], str, int]] = []
    for agent, t in sorted(members.items()):
        text = chains[agent][t - 1]
        src = sources[agent][t - 1] if t - 1 < len(sources[agent]) else 0
        for g in groups:
            if agree(g[1], text, align_jaccard):
                g[0].append(agent)
                break
        else:
            groups.append(([agent], text, src))
    parts = []
    for agents, text, src in groups:
        who = (f"agent {agents[0] + 1}" if len(agents) == 1 else
               "agents " + ", ".join(str(a + 1) for a in agents[:-1]) + f" and {agents[-1] + 1}")
        verb = "states" if len(agents) == 1 else "state"
        parts.append(f'{who} {verb} "{text}"' + (f" (passage {src})" if src else ""))
    text = "; ".join(parts)
    return text[0].upper() + text[1:]


def localize_graphs(chains: list[list[str]], premises: list[list[list[int]]], sources: list[list[int]],
                    max_conflicts: int = 1, align_jaccard: float = 0.8) -> GraphLocalization:
    """The minimal conflicts of one question's K graphs (module docstring). Never raises on
    a well-formed graph (premises backwards, as ``premises.build_graph`` guarantees)."""
    k = len(chains)
    agreed = agreed_claims(chains, align_jaccard)
    candidates = [minimal_conflicts(premises[i], agreed[i]) for i in range(k)]
    depth = [depths(p) for p in premises]
    pool = sorted(((depth[i][t - 1], i, t) for i in range(k) for t in candidates[i]))
    used: set[tuple[int, int]] = set()
    conflicts: list[dict[int, int]] = []
    for _, i, t in pool:
        if len(conflicts) >= max_conflicts:
            break
        if (i, t) in used:
            continue
        members = {i: t}
        used.add((i, t))
        seed_words, seed_src = set(claim_words(chains[i][t - 1])), sources[i][t - 1]
        for j in range(k):
            free = [u for u in candidates[j] if (j, u) not in used] if j != i else []
            if not free:
                continue

            def score(u: int, j=j) -> tuple[float, int]:
                same_source = bool(seed_src) and sources[j][u - 1] == seed_src
                return (_jaccard(seed_words, set(claim_words(chains[j][u - 1]))) + same_source, -u)

            best = max(free, key=score)
            members[j] = best
            used.add((j, best))
        conflicts.append(members)
    witnesses: list[list[int]] = [[] for _ in range(k)]
    for members in conflicts:
        for agent, t in members.items():
            witnesses[agent].append(t)
    reason = NO_CONFLICT if not conflicts else NO_COUNTERPART
    fallback = []
    for i in range(k):
        if witnesses[i]:
            fallback.append("")
        else:  # the answer-bearing last claim, as the chain localizer's fallback
            witnesses[i] = [len(chains[i])]
            fallback.append(reason)
    if conflicts:  # an agent without a counterpart still takes part in the first conflict
        for i in range(k):
            if fallback[i]:
                conflicts[0][i] = witnesses[i][0]
        described = [_describe(chains, sources, m, align_jaccard) for m in conflicts]
    else:
        described = [GENERIC_CONFLICT]
    delta = described[0] if len(described) == 1 else " ".join(f"({n}) {d}" for n, d in enumerate(described, 1))
    segment = [sorted(set().union(*(closure(premises[i], w) for w in witnesses[i]))) for i in range(k)]
    return GraphLocalization(delta, described, [w[0] for w in witnesses], witnesses, fallback, segment, agreed)


def graph_localization_row(qid: str, iteration: int, chains: list[list[str]], loc: GraphLocalization) -> dict:
    """A ``lmad_localizations`` row (no localizer call was made: its call columns are the caller's)."""
    return {"qid": qid, "iteration": iteration, "conflict": loc.conflict,
            "conflict_fallback": loc.conflicts == [GENERIC_CONFLICT], "witness": loc.witness,
            "witness_fallback": loc.witness_fallback,
            "witness_claims": [" ".join(c[t - 1] for t in ws) for c, ws in zip(chains, loc.witnesses)],
            "segments": [[c[t - 1] for t in seg] for c, seg in zip(chains, loc.segment_indices)],
            "witnesses": loc.witnesses, "segment_indices": loc.segment_indices, "conflicts": loc.conflicts,
            "raw_output": "", "parse_error": ""}
