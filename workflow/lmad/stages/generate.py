"""Rule ``generate``: independent solver samples per question (stages ``cot`` and ``proposals``)."""
from __future__ import annotations

import logging

from ..backends import open_backend
from ..backends.batch import by_backend
from ..committees import crew
from ..societies import agent_prompt
from ..prompts import load_prompt
from ..schemas import read_table, write_table
from ..answers import reading_of
from ..solver import derive_seed, sample_rows, solver_request
from .society_agents import JobWeights
from .units import check_aligned, split_rows

log = logging.getLogger(__name__)


def generate(questions: list[str], prompt: str, samples: list[str], model: dict, cache_dir: str, stage: str,
             temperatures: list[float], max_tokens: int, seed: int, provenance: dict) -> None:
    """One sample per agent temperature per question of every dataset, all in one batch;
    ``samples[i]`` is the table of the dataset in ``questions[i]``.

    ``proposals`` (the shared round-0 proposals of SC, MAD, Consensus and LMAD) uses the
    persona temperatures; ``cot`` uses a single agent at temperature 0. On a committee
    (lmad.committees) agent i is member i — its model, persona and variant (the temperatures
    are the members' here) — and CoT is the first member; one batch per model.
    """
    check_aligned("generate", len(questions), samples=samples)
    solver = load_prompt(prompt)
    members = crew(model, len(temperatures)) or [None] * len(temperatures)
    weights = JobWeights(model, cache_dir, lambda spec, cache: open_backend(spec, cache))
    jobs, owners, total = [], [], 0
    for u, path in enumerate(questions):
        qs = read_table("questions", path).to_dicts()
        total += len(qs)
        for q in qs:
            for agent, (t, member) in enumerate(zip(temperatures, members)):
                s = derive_seed(seed, q["qid"], agent)
                ask = agent_prompt(solver, member) if member else solver
                jobs.append((weights.of(member), {
                    "qid": q["qid"], "stage": stage, "round": 0, "agent": agent, "temperature": float(t), "seed": s,
                    "request": solver_request(ask, q, t, s, max_tokens), "reading": reading_of(q)}))
                owners.append(u)
    rows = by_backend(jobs, sample_rows) if jobs else []
    for path, unit_rows in zip(samples, split_rows(len(samples), owners, rows)):
        write_table("samples", unit_rows, path, provenance)
    log.info("%s: %d questions of %d datasets x %d agents; %s", stage, total, len(questions), len(temperatures),
             weights.stats() if jobs else weights.of(None).stats())
