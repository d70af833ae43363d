"""Rule ``sc_matched`` (rules/matched.smk): the "matched tokens" self-consistency baseline of
When Debate Helps — as many solver samples per question as a target method's generated-token budget buys.

Per dataset, with B = the target method's mean generated tokens per question (its predictions
table: every call it made) and s = the mean generated tokens of one shared proposal sample,
N = clamp(floor(B / s), 1, ``max_samples``) samples per question. Sample i uses temperature
``temperatures[i % K]`` and seed ``derive_seed(seed, qid, i)``: the first K are exactly the
shared proposals' requests (cache hits), so SC is this baseline's prefix. Method ``sc-matched``
then votes over them (rule ``predict``), its cost being all N calls.
"""
from __future__ import annotations

import logging
import math

from ..backends import open_backend
from ..prompts import load_prompt
from ..schemas import read_table, write_table
from ..answers import reading_of
from ..solver import derive_seed, sample_rows, solver_request
from .units import check_aligned, split_rows

log = logging.getLogger(__name__)


def matched_samples(budget: float, per_sample: float, max_samples: int) -> int:
    """How many samples a budget of ``budget`` generated tokens buys at ``per_sample`` each (≥ 1)."""
    if not math.isfinite(budget) or not math.isfinite(per_sample) or per_sample <= 0:
        return 1
    return max(1, min(int(max_samples), math.floor(budget / per_sample)))


def sc_matched(questions: list[str], proposals: list[str], target: list[str], samples: list[str], prompt: str,
               model: dict, cache_dir: str, target_method: str, temperatures: list[float], max_samples: int,
               max_tokens: int, seed: int, provenance: dict) -> None:
    check_aligned("sc_matched", len(questions), proposals=proposals, target=target, samples=samples)
    solver = load_prompt(prompt)
    jobs, owners, sizes = [], [], []
    for u, path in enumerate(questions):
        qs = read_table("questions", path).to_dicts()
        spent = read_table("predictions", target[u])["completion_tokens"]
        props = read_table("samples", proposals[u])["completion_tokens"]
        budget = float(spent.mean()) if len(spent) else math.nan
        per_sample = float(props.mean()) if len(props) else math.nan
        n = matched_samples(budget, per_sample, max_samples)
        sizes.append((n, budget, per_sample))
        for q in qs:
            for i in range(n):
                t = float(temperatures[i % len(temperatures)])
                s = derive_seed(seed, q["qid"], i)
                jobs.append({"qid": q["qid"], "stage": "matched", "round": 0, "agent": i, "temperature": t,
                             "seed": s, "request": solver_request(solver, q, t, s, max_tokens), "reading": reading_of(q)})
                owners.append(u)
    backend = open_backend(model, cache_dir)
    rows = sample_rows(backend, jobs)
    for path, unit_rows in zip(samples, split_rows(len(samples), owners, rows)):
        write_table("samples", unit_rows, path, provenance)
    log.info("matched to %s: per dataset (samples, target tokens / q, tokens / sample) %s; %s", target_method,
             [(n, round(b, 1), round(p, 1)) for n, b, p in sizes], backend.stats())
