"""Rules ``generate_cot`` and ``propose``: independent solver samples per question."""
from __future__ import annotations

import logging

from ..backends import open_backend
from ..prompts import load_prompt
from ..schemas import read_table, write_table
from ..solver import derive_seed, sample_rows, solver_request

log = logging.getLogger(__name__)


def generate(questions: str, prompt: str, samples: str, model: dict, cache_dir: str, stage: str,
             temperatures: list[float], max_tokens: int, seed: int, provenance: dict) -> None:
    """One sample per agent temperature per question, all in one batch.

    ``propose`` (the shared round-0 proposals of SC, MAD, Consensus and LMAD) uses the
    persona temperatures; ``generate_cot`` uses a single agent at temperature 0.
    """
    qs = read_table("questions", questions).to_dicts()
    solver = load_prompt(prompt)
    backend = open_backend(model, cache_dir)
    jobs = [
        {"qid": q["qid"], "stage": stage, "round": 0, "agent": agent, "temperature": float(t),
         "seed": (s := derive_seed(seed, q["qid"], agent)),
         "request": solver_request(solver, q, t, s, max_tokens)}
        for q in qs for agent, t in enumerate(temperatures)
    ]
    rows = sample_rows(backend, jobs)
    write_table("samples", rows, samples, provenance)
    log.info("%s: %d questions x %d agents; %s", stage, len(qs), len(temperatures), backend.stats())
