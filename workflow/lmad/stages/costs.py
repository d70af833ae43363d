"""Rule ``costs_by_model``: a backbone's calls and tokens split by the model that made them.

Every call row a method's cost sums (its predictions: lmad.call_accounting) is attributed to a model by
its role and agent (lmad.committees.call_model): an agent's calls to its member's model, the
calls of no agent to the role's. A single model's rows all go to it. The per-model sums of each
(dataset, method) must equal its predictions' totals — checked, so an attribution that misses
or double-counts a call fails the job instead of writing a plausible table.
"""
from __future__ import annotations

import logging
from collections import defaultdict

import polars as pl

from .. import layout
from ..atomic import write_text
from ..committees import call_model
from ..call_accounting import COST_COLUMNS
from ..disagreement_labels import MEASUREMENT_STEPS
from ..number_format import markdown
from ..registry import method as registered_method
from ..schemas import read_columns, read_table, write_table

log = logging.getLogger(__name__)


_TOKENS = ["prompt_tokens", "completion_tokens"]


def _grouped(frame: pl.DataFrame) -> list[tuple[str, int, dict]]:
    """(role, agent, {calls, prompt_tokens, completion_tokens}) per (role, agent) of a frame of call rows:
    a model is a function of role and agent, so their sums attribute the same as the rows one by one."""
    sums = frame.group_by("role", "agent").agg(pl.len().alias("calls"), *(pl.col(k).sum() for k in _TOKENS))
    return [(r["role"], r["agent"], r) for r in sums.to_dicts()]


def call_rows(path: str) -> tuple[tuple[str, str], list[tuple[str, int, dict]]]:
    """The (dataset, owner) of one call table and its calls as (role, agent, cost) per role and agent;
    owner: a method (debate rounds, LMAD traces) or a samples stage (cot, proposals, matched). Reads
    only the columns a cost needs."""
    where = layout.parse(path)
    if where.kind == "lmad_trace":
        log_ = read_columns("lmad_trace", path, ["call_log"]).explode("call_log").drop_nulls().unnest("call_log")
        return (where.dataset, where.method), _grouped(log_)
    if where.kind == "debate_round" and where.part == "_steps":
        steps = read_columns("debate_steps", path, ["step", "agent", *_TOKENS])
        steps = steps.filter(~pl.col("step").is_in(list(MEASUREMENT_STEPS))).rename({"step": "role"})
        return (where.dataset, where.method), _grouped(steps)
    if where.kind == "samples" or where.kind == "debate_round" and where.part == "":
        solver = read_columns("samples", path, ["agent", *_TOKENS]).with_columns(role=pl.lit("solver"))
        return (where.dataset, where.stage if where.kind == "samples" else where.method), _grouped(solver)
    raise ValueError(f"{path}: not a table of calls (samples, debate round, LMAD trace)")


def by_model(calls, members: list[str], roles: dict[str, str]) -> dict[str, dict[str, int]]:
    """Calls and tokens of (role, agent, cost) triples, per model that made them; a cost row counts
    as its ``calls`` calls (one without it as one call)."""
    sums: dict[str, dict[str, int]] = defaultdict(lambda: dict.fromkeys(COST_COLUMNS, 0))
    for role, agent, r in calls:
        cell = sums[call_model(members, roles, role, agent)]
        cell["calls"] += r.get("calls", 1)
        cell["prompt_tokens"] += r["prompt_tokens"]
        cell["completion_tokens"] += r["completion_tokens"]
    return dict(sums)


def split_costs(backbone: str, predictions: list[str], calls: list[str], members: list[str],
                roles: dict[str, str]) -> list[dict]:
    """``costs_by_model`` rows of every (dataset, method) of ``predictions`` from its ``calls``."""
    by_owner: dict[tuple[str, str], list[tuple[str, int, dict]]] = defaultdict(list)
    for path in calls:
        owner, rows = call_rows(path)
        by_owner[owner] += rows
    out = []
    for path in predictions:
        where = layout.parse(path)
        method = registered_method(where.method)
        owner = (where.dataset, method.samples if method.family == "single" else where.method)
        sums = by_model(by_owner.get(owner, []), members, roles)
        frame = read_table("predictions", path)
        want = {k: int(frame[k].sum()) for k in COST_COLUMNS}
        got = {k: sum(c[k] for c in sums.values()) for k in COST_COLUMNS}
        if got != want:
            raise ValueError(f"{path}: the calls attributed to models add up to {got}, the predictions to {want}")
        out += [{"backbone": backbone, "dataset": where.dataset, "method": where.method, "model": m, **c}
                for m, c in sums.items()]
    return out


def costs_markdown(rows: list[dict], backbone: str, methods: list[str], members: list[str]) -> str:
    """Per method (config order) and model (members first): calls and tokens over every dataset."""
    order = list(dict.fromkeys(members + sorted({r["model"] for r in rows})))
    total: dict[tuple[str, str], dict[str, int]] = defaultdict(lambda: dict.fromkeys(COST_COLUMNS, 0))
    for r in rows:
        for k in COST_COLUMNS:
            total[(r["method"], r["model"])][k] += r[k]
    body = [[registered_method(m).label, model, *(str(total[(m, model)][k]) for k in COST_COLUMNS)]
            for m in methods for model in order if (m, model) in total]
    header = ["method", "model", "calls", "prompt tokens", "completion tokens"]
    return (f"# Calls and tokens by model: {backbone}\n\nEvery dataset together; each method's rows add up to its "
            f"predictions' cost.\n\n{markdown(header, body)}\n")


def costs_by_model(predictions: list[str], calls: list[str], table: str, md: str, backbone: str, methods: list[str],
                   members: list[str], roles: dict[str, str], provenance: dict) -> None:
    rows = split_costs(backbone, predictions, calls, members, roles)
    write_table("costs_by_model", rows, table, provenance)
    write_text(md, costs_markdown(rows, backbone, methods, members))
    log.info("%s: %d (dataset, method, model) cells over models %s", backbone, len(rows),
             sorted({r["model"] for r in rows}))
