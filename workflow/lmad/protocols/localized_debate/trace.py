"""The LMAD trace and final predictions, assembled from the saved stage tables only.

One trace row per question per iteration in which it was active: the state it started
from, the answers, chains, conflict, witnesses (with fallbacks), segments, positions of
every round (round 0 = the witness claims), the proposed repair and quotations, every
guard check, the admission and the stop. Each row carries the cost of the calls made
for that question in that iteration; a question's prediction carries the sum.

Accounting identity, checked on every run: every call row of an iteration belongs to a
question that has a commit decision in that iteration, so the trace's calls add up to
all the calls in the stage tables.

Built as polars joins of the stage frames: the nested values (chains, checks, call logs) pass
from the tables read to the trace written without becoming Python objects, which cost most of
``lmad_predict``, the job that runs alone after a run's LMAD chain.
"""
from __future__ import annotations

import polars as pl

from ...call_accounting import COST_COLUMNS
from ...schemas import TABLES, stack

# stage table → the role of its calls
CALL_TABLES = {"samples": "solver", "chains": "extractor", "localizations": "localizer", "positions": "debater",
               "repairs": "resolver", "relations": "relation"}

_TRACE = TABLES["lmad_trace"][0]
_CALL = _TRACE["call_log"].inner


def _empty(dtype: pl.DataType) -> pl.Expr:
    """An empty list of list type ``dtype``, as a literal to fill nulls with."""
    return pl.lit(pl.Series([[]], dtype=dtype))


def _empty_list(column: str) -> pl.Expr:
    return _empty(_TRACE[column])


def _or_empty(column: str) -> pl.Expr:
    return pl.col(column).fill_null(_empty_list(column))


def _calls(tables: dict[str, pl.DataFrame]) -> pl.DataFrame:
    """Every call row, by iteration (``_k``) and question, in table then file order (graph LMAD
    localizes without a call: "skipped" rows are not calls)."""
    parts = [pl.DataFrame(schema={"_k": pl.Int64, "qid": pl.String, "call": _CALL})]
    for name, role in CALL_TABLES.items():
        t = tables[name]
        agent = pl.col("agent").cast(pl.Int64) if "agent" in t.columns else pl.lit(-1, dtype=pl.Int64)
        parts.append(t.filter(pl.col("finish_reason") != "skipped").select(
            "_k", "qid", pl.struct(pl.lit(role).alias("role"), agent.alias("agent"), "finish_reason",
                                   "prompt_tokens", "completion_tokens").alias("call")))
    return pl.concat(parts, how="vertical")


#: the column of a stage table's rows that holds their iteration (``build_trace_frames``' input)
ITERATION = "_k"
TRACE_TABLES = (*CALL_TABLES, "commits")


def build_trace(datasets: dict[str, str], method: str, per_iteration: list[dict[str, pl.DataFrame]]) -> pl.DataFrame:
    """The trace table of one unit (unsorted: write_table sorts it). ``per_iteration[k]`` holds
    iteration k's frames of samples, chains, localizations, positions, repairs, relations and
    commits; ``datasets``: each question's dataset."""
    tables = {name: stack([t[name] for t in per_iteration], ITERATION) for name in TRACE_TABLES}
    return build_trace_frames(datasets, method, tables, len(per_iteration))


def build_trace_frames(datasets: dict[str, str], method: str, t: dict[str, pl.DataFrame], iterations: int) -> pl.DataFrame:
    """``build_trace`` from each stage table's rows of all ``iterations`` iterations in one frame
    (``t[name]``), their iteration in column ``ITERATION`` (lmad.schemas.read_unit_files): one
    pipeline for all iterations, as each polars operation costs ~0.3 ms."""
    if not iterations:
        return pl.DataFrame(schema=_TRACE)
    keys = ["_k", "qid"]
    commits, calls = t["commits"], _calls(t)
    stray = calls.join(commits.select(keys), on=keys, how="anti").sort(keys)
    if stray.height:
        k = stray["_k"][0]
        raise ValueError(f"iteration {k}: calls for questions without a commit decision: "
                         f"{stray.filter(pl.col('_k') == k)['qid'].unique(maintain_order=True).to_list()[:5]}")
    unknown = sorted(set(commits["qid"].to_list()) - set(datasets))
    if unknown:
        raise ValueError(f"commit decisions for questions not in the questions table: {unknown[:5]}")
    cost = calls.group_by(keys, maintain_order=True).agg(
        pl.len().cast(pl.Int64).alias("calls"),
        pl.col("call").struct.field("prompt_tokens").sum().alias("prompt_tokens"),
        pl.col("call").struct.field("completion_tokens").sum().alias("completion_tokens"),
        pl.col("call").alias("call_log"))
    # each question's chains in agent order (ties in file order)
    chains = t["chains"].sort(["_k", "agent"], maintain_order=True).group_by(keys, maintain_order=True).agg(
        pl.col("nodes").alias("chains"), pl.col("fallback").alias("chain_fallbacks"),
        pl.col("premises").fill_null(_empty(_TRACE["premises"].inner)),
        pl.col("sources").fill_null(_empty(_TRACE["sources"].inner)),
        pl.col("graph_fallback").fill_null("").alias("graph_fallbacks"))
    # a question's last localization row and last position of an agent in a round, as mappings keep
    locs = t["localizations"].unique(keys, keep="last", maintain_order=True)
    rounds = (t["positions"].unique([*keys, "round", "agent"], keep="last", maintain_order=True)
              .sort([*keys, "round", "agent"])
              .group_by([*keys, "round"], maintain_order=True).agg(pl.col("position"))
              .group_by(keys, maintain_order=True).agg(pl.col("position").alias("rounds")))
    # round 0 of the positions: the witness claims, as a list of one list
    claims = locs.group_by(keys).agg(pl.col("witness_claims").alias("claims"))
    located = (locs.select(*keys, "conflict", "witness", "witness_fallback", "segments", "witnesses",
                           "segment_indices", "conflicts", pl.lit(True).alias("located"))
               .join(claims, on=keys, how="left").join(rounds, on=keys, how="left"))
    frame = (commits.join(located, on=keys, how="left").join(chains, on=keys, how="left")
             .join(cost, on=keys, how="left"))
    is_located = pl.col("located").fill_null(False)

    def if_located(column: str, value: pl.Expr | None = None) -> pl.Expr:
        value = pl.col(column) if value is None else value
        return pl.when(is_located).then(value).otherwise(_empty_list(column)).alias(column)

    positions = pl.concat_list(pl.col("claims"), pl.col("rounds").fill_null(_empty_list("positions")))
    frame = frame.sort(keys, maintain_order=True).select(
        "qid", pl.col("qid").replace_strict(datasets, return_dtype=pl.String).alias("dataset"),
        pl.lit(method).alias("method"), pl.col("_k").alias("iteration"),
        # the premises committed when the question was last decided (none before its first)
        pl.when(pl.int_range(pl.len()).over("qid") == 0).then(_empty_list("committed_before"))
        .otherwise(pl.col("committed").shift(1).over("qid")).alias("committed_before"),
        "answers", "agreed", _or_empty("chains"), _or_empty("chain_fallbacks"), "conflict",
        if_located("witness"), if_located("witness_fallback"), if_located("segments"), if_located("positions", positions),
        "repair_nodes", "quotes", "checks", "admitted", pl.col("committed").alias("committed_after"),
        "stop_reason", "prediction", *(pl.col(c).fill_null(0).cast(pl.Int64) for c in COST_COLUMNS),
        _or_empty("call_log"), (pl.col("_k") == iterations - 1).alias("final_iteration"),
        _or_empty("premises"), _or_empty("sources"), _or_empty("graph_fallbacks"),
        _or_empty("witnesses"), _or_empty("segment_indices"), _or_empty("conflicts"))
    return frame


def lmad_prediction_rows(datasets: dict[str, str], method: str, final_state: list[dict],
                         trace: pl.DataFrame) -> list[dict]:
    """One prediction per question of the final state, costed by the sum of its trace rows."""
    if {s["qid"] for s in final_state} != set(datasets):
        raise ValueError("the final LMAD state does not cover exactly the questions")
    summed = trace.group_by("qid").agg(pl.col(c).sum() for c in COST_COLUMNS)
    totals = {r["qid"]: {c: r[c] for c in COST_COLUMNS} for r in summed.iter_rows(named=True)}
    zero = dict.fromkeys(COST_COLUMNS, 0)
    out = []
    for s in sorted(final_state, key=lambda s: s["qid"]):
        if s["active"] or s["stop_reason"] is None:
            raise ValueError(f"question {s['qid']} is still active after the last iteration")
        out.append({"qid": s["qid"], "dataset": datasets[s["qid"]], "method": method,
                    "prediction": s["prediction"], "prediction_norm": s["prediction_norm"],
                    "stop_reason": s["stop_reason"], "stop_round": s["stop_iteration"],
                    **totals.get(s["qid"], zero)})
    return out
