"""Rule ``generate``: independent solver samples per question (stages ``cot`` and ``proposals``)."""
from __future__ import annotations

import logging

from ..backends import open_backend
from ..prompts import load_prompt
from ..schemas import read_table, write_table
from ..solver import derive_seed, reader_of, sample_rows, solver_request
from .units import check_aligned, split_rows

log = logging.getLogger(__name__)


def generate(questions: list[str], prompt: str, samples: list[str], model: dict, cache_dir: str, stage: str,
             temperatures: list[float], max_tokens: int, seed: int, provenance: dict) -> None:
    """One sample per agent temperature per question of every dataset, all in one batch;
    ``samples[i]`` is the table of the dataset in ``questions[i]``.

    ``proposals`` (the shared round-0 proposals of SC, MAD, Consensus and LMAD) uses the
    persona temperatures; ``cot`` uses a single agent at temperature 0.
    """
    check_aligned("generate", len(questions), samples=samples)
    solver = load_prompt(prompt)
    jobs, owners, total = [], [], 0
    for u, path in enumerate(questions):
        qs = read_table("questions", path).to_dicts()
        total += len(qs)
        for q in qs:
            for agent, t in enumerate(temperatures):
                s = derive_seed(seed, q["qid"], agent)
                jobs.append({"qid": q["qid"], "stage": stage, "round": 0, "agent": agent, "temperature": float(t),
                             "seed": s, "request": solver_request(solver, q, t, s, max_tokens),
                             "reader": reader_of(q)})
                owners.append(u)
    backend = open_backend(model, cache_dir)
    rows = sample_rows(backend, jobs)
    for path, unit_rows in zip(samples, split_rows(len(samples), owners, rows)):
        write_table("samples", unit_rows, path, provenance)
    log.info("%s: %d questions of %d datasets x %d agents; %s", stage, total, len(questions), len(temperatures),
             backend.stats())
