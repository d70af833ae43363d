"""Debate-baseline rules (rules/debate.smk): one job per method and round, then predict.

Round t of method m lives in ``results/{backbone}/{dataset}/{m}/``:

  round{t}.parquet        (samples)       each active agent's round-t response and answer
  round{t}_steps.parquet  (debate_steps)  advice, notes, critiques, manner steps, judge, moderator
  round{t}_state.parquet  (debate_state)  every question: still debating, or stopped (reason, answer)

Round 0 of a protocol that opens like self-consistency (with the persona temperatures) is
the shared ``samples/proposals.parquet``, copied without a call. The protocol itself
(stages, visibility, stop rule) is data in ``lmad.protocols.debate.methods``.
"""
from __future__ import annotations

import logging
from collections import Counter

from ..backends import open_backend
from ..prompts import load_prompt
from ..protocols.debate import prediction_rows, protocol, run_round
from ..schemas import read_table, write_table

log = logging.getLogger(__name__)

PROMPT_PREFIX = "prompt_"


def debate_round(questions: str, samples: str, steps: str, state: str, model: dict, cache_dir: str, method: str,
                 round_index: int, last: bool, temperatures: list[float], manners: list[str], max_tokens: int,
                 aux_max_tokens: dict, seed: int, provenance: dict, proposals: str | None = None,
                 previous: str | None = None, previous_state: str | None = None, **prompt_files: str) -> None:
    """Round ``round_index`` of ``method``: every stage of the round in one batch per step.
    ``prompt_files``: ``prompt_<role>`` paths of the roles this round uses."""
    bad = [k for k in prompt_files if not k.startswith(PROMPT_PREFIX)]
    if bad:
        raise TypeError(f"debate_round: unexpected arguments {bad}")
    prompts = {k[len(PROMPT_PREFIX):]: load_prompt(v) for k, v in prompt_files.items()}
    backend = open_backend(model, cache_dir)
    result = run_round(
        protocol(method), method, round_index, last, read_table("questions", questions).to_dicts(), backend, prompts,
        temperatures, manners, seed, max_tokens, aux_max_tokens,
        previous=read_table("samples", previous).to_dicts() if previous else (),
        previous_state=read_table("debate_state", previous_state).to_dicts() if previous_state else None,
        proposals=read_table("samples", proposals).to_dicts() if proposals else None)
    write_table("samples", result.samples, samples, provenance)
    write_table("debate_steps", result.steps, steps, provenance)
    write_table("debate_state", result.state, state, provenance)
    stops = Counter(s["stop_reason"] for s in result.state if not s["active"] and s["stop_round"] == round_index)
    source = "reused the shared proposals; " if proposals else ""
    log.info("%s round %d: %d active questions, %s%d model calls (%d answers, %d other steps); stopped now: %s; %s",
             method, round_index, result.active, source, result.calls, len(result.samples), len(result.steps),
             dict(stops), backend.stats())


def debate_predict(questions: str, samples: list[str], steps: list[str], final_state: str, predictions: str,
                   method: str, provenance: dict) -> None:
    """The final answers of ``method`` with the cost of all its calls over every round."""
    rows = prediction_rows(read_table("questions", questions).to_dicts(), method,
                           [r for p in samples for r in read_table("samples", p).to_dicts()],
                           [r for p in steps for r in read_table("debate_steps", p).to_dicts()],
                           read_table("debate_state", final_state).to_dicts())
    write_table("predictions", rows, predictions, provenance)
    log.info("%s: %d predictions; stop reasons %s", method, len(rows), dict(Counter(r["stop_reason"] for r in rows)))
