"""Coverage-selected societies (When Debate Helps, seed 004 §4): which K agents of a pool to debate with.

**Pool.** An agent is (temperature, persona, prompt variant) and, for "neural thicket" agents,
a seeded weight perturbation (``backends/perturb.py``; transformers backend, or the test double).
Personas and variants are data here (:data:`PERSONAS`, :data:`VARIANTS`); config
``societies.pool`` picks them. Every pool agent answers every question once with the solver
prompt under its persona (system message) and variant (an instruction before the answer line).

**Splits.** Questions are ranked by a seeded hash of (dataset, qid) over all datasets; the first
``selection_fraction`` are the *selection* split, the rest the disjoint *evaluation* split.

**Selection** (on the selection split only), each picking ``k`` agents:

``ac_greedy``  labeled answer coverage: cov[a, q] = agent a's answer is correct (EM vs gold + aliases)
``sc_greedy``  label-free support coverage: valid (non-empty) answers of all pool agents on q are
               clustered by normalized form; support[a, q] = (size of a's cluster − 1) / (valid − 1);
               cov[a, q] = support ≥ ``sc_min_support`` (a's answer is shared by enough of the pool,
               not necessarily the plurality)
``top_k``      the k individually most accurate agents (labels)
``default``    the pipeline's default personas: persona ``plain``, variant ``standard``, no perturbation,
               at ``agents.temperatures`` (its size is theirs, not k)

Greedy: at each step the agent with the largest marginal coverage |cov[a] \\ covered| (questions
counted once when any selected agent covers them — a cardinality-constrained maximum coverage),
ties broken by its total score (accuracy / support) and then by pool index. Greedy is exact when
each step's best marginal gain is unique to the optimum's agents (e.g. disjoint coverage sets) and
a (1 − 1/e) approximation in general.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Sequence

from .answers import exact_match, majority_vote, normalize_answer
from .prompts import Prompt

#: persona name -> system message (None: the solver prompt's own)
PERSONAS: dict[str, str | None] = {
    "plain": None,
    "skeptic": "You are a skeptical fact-checker. You accept only what a passage states outright and you check "
               "every hop of the reasoning against the passages before you answer.",
    "bridge": "You answer multi-hop questions by first naming the bridge entity that connects the passages, "
              "then following it to the answer.",
    "concise": "You answer multi-hop questions with the shortest span the passages support, copying names "
               "exactly as the passages write them.",
}
#: prompt variant name -> instruction inserted before the answer line ("" = the solver prompt as is)
VARIANTS: dict[str, str] = {
    "standard": "",
    "verify": "Before the last line, check that every fact you used is stated in one of the passages.",
}
SELECTORS = ("ac_greedy", "sc_greedy", "top_k", "default")


@dataclass(frozen=True)
class PoolAgent:
    index: int
    temperature: float
    persona: str
    variant: str
    perturb_seed: int | None = None
    perturb_scale: float = 0.0

    @property
    def name(self) -> str:
        base = f"t{self.temperature:g}-{self.persona}-{self.variant}"
        return base + (f"-w{self.perturb_seed}x{self.perturb_scale:g}" if self.perturb_seed is not None else "")

    @property
    def perturb(self) -> dict | None:
        return None if self.perturb_seed is None else {"seed": self.perturb_seed, "scale": self.perturb_scale}


def pool_agents(temperatures: Sequence[float], personas: Sequence[str], variants: Sequence[str],
                perturbations: Sequence[dict] = ()) -> list[PoolAgent]:
    """Every temperature × persona × variant, then each perturbation at every temperature with the
    plain persona and standard variant (the neural-thicket agents)."""
    for p in personas:
        if p not in PERSONAS:
            raise ValueError(f"unknown persona {p!r}; known: {sorted(PERSONAS)}")
    for v in variants:
        if v not in VARIANTS:
            raise ValueError(f"unknown prompt variant {v!r}; known: {sorted(VARIANTS)}")
    specs = [(float(t), p, v, None, 0.0) for t in temperatures for p in personas for v in variants]
    specs += [(float(t), "plain", "standard", int(w["seed"]), float(w["scale"])) for w in perturbations
              for t in temperatures]
    return [PoolAgent(i, *s) for i, s in enumerate(specs)]


def agent_prompt(solver: Prompt, agent: PoolAgent) -> Prompt:
    """The solver prompt under an agent's persona and variant."""
    system = PERSONAS[agent.persona] or solver.system
    extra = VARIANTS[agent.variant]
    user = solver.user.replace("$answer_line", f"{extra} $answer_line") if extra else solver.user
    return Prompt(path=f"{solver.path}#{agent.persona}/{agent.variant}", system=system, user=user)


def split_of(seed: int, keys: Sequence[tuple[str, str]], selection_fraction: float) -> dict[tuple[str, str], str]:
    """(dataset, qid) -> "selection" | "evaluation", a seeded ranking over every question."""
    rank = sorted(keys, key=lambda k: hashlib.sha256(f"{seed}\x00{k[0]}\x00{k[1]}".encode()).hexdigest())
    cut = round(selection_fraction * len(rank))
    if len(rank) >= 2:
        cut = min(max(cut, 1), len(rank) - 1)  # both splits non-empty
    return {k: ("selection" if i < cut else "evaluation") for i, k in enumerate(rank)}


# ----------------------------------------------------------------------------- coverage

def answer_coverage(answers: Sequence[Sequence[str]], golds: Sequence[Sequence[str]]) -> list[list[float]]:
    """cov[a][q] = 1.0 when agent a's answer to question q is correct. ``answers[a][q]``."""
    return [[float(bool(exact_match(x or "", g))) for x, g in zip(row, golds, strict=True)] for row in answers]


def support_scores(answers: Sequence[Sequence[str]]) -> list[list[float]]:
    """support[a][q] = (size of a's answer cluster − 1) / (valid answers − 1); 0 for an empty answer
    or when fewer than 2 agents gave a valid answer. No labels."""
    agents, questions = len(answers), len(answers[0]) if answers else 0
    out = [[0.0] * questions for _ in range(agents)]
    for q in range(questions):
        norms = [normalize_answer(answers[a][q] or "") for a in range(agents)]
        valid = [n for n in norms if n]
        if len(valid) < 2:
            continue
        for a, n in enumerate(norms):
            if n:
                out[a][q] = (valid.count(n) - 1) / (len(valid) - 1)
    return out


def greedy(scores: Sequence[Sequence[float]], k: int, threshold: float = 0.5) -> list[tuple[int, int]]:
    """Greedy maximum coverage: [(agent, marginal questions covered)] in pick order. A question is
    covered by agent a when scores[a][q] ≥ threshold; ties by total score, then lower index."""
    covers = [{q for q, s in enumerate(row) if s >= threshold} for row in scores]
    totals = [sum(row) for row in scores]
    covered: set[int] = set()
    picked: list[tuple[int, int]] = []
    left = list(range(len(scores)))
    for _ in range(min(k, len(scores))):
        best = max(left, key=lambda a: (len(covers[a] - covered), totals[a], -a))
        picked.append((best, len(covers[best] - covered)))
        covered |= covers[best]
        left.remove(best)
    return picked


def top_k(scores: Sequence[Sequence[float]], k: int) -> list[int]:
    totals = [sum(row) for row in scores]
    return sorted(range(len(scores)), key=lambda a: (-totals[a], a))[:k]


def coverage(scores: Sequence[Sequence[float]], members: Sequence[int], threshold: float = 0.5) -> int:
    """Questions covered by at least one member."""
    n = len(scores[0]) if scores else 0
    return sum(any(scores[a][q] >= threshold for a in members) for q in range(n))


def evaluate(answers: Sequence[Sequence[str]], golds: Sequence[Sequence[str]], members: Sequence[int]) -> dict:
    """A society on a question set: proposal hit (some member right), its majority vote (members in
    selection order, ties to the first), mean member accuracy — percentages."""
    n = len(golds)
    if n == 0 or not members:
        return {"n": n, "hit": None, "vote": None, "member_acc": None}
    hit = vote = right = 0
    for q, g in enumerate(golds):
        said = [answers[a][q] or "" for a in members]
        ok = [bool(exact_match(x, g)) for x in said]
        hit += any(ok)
        right += sum(ok)
        vote += bool(exact_match(majority_vote(said)[0] or "", g))
    return {"n": n, "hit": 100 * hit / n, "vote": 100 * vote / n, "member_acc": 100 * right / (n * len(members))}
