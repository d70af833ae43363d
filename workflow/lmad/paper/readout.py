"""Round-level controls and readout accounting (When Debate Helps), from the ``finalized`` tables.

For every backbone × dataset × method × round t × finalizer f, over the method's questions
(correctness by the question's answer type against answer + aliases, as in ``headroom``):

    R0 vote, hit, headroom         of the method's round-0 answers (its own round 0)
    final                          correctness of finalizer f applied to the round-t answers
    recovered, new_correct, damage against the R0 vote; gain = final − R0 vote
                                   = recovered + new_correct − damage (asserted: ``AccountingError``)
    round_vote, round_hit          the plain vote and the proposal hit of the round-t answers
    gain_own_r0                    final − f's own round-0 final: the paper's "points above the R0
                                   result" of one finalizer applied to every saved round (§A.10)
    overturns                      f's answer differs from the round-t vote (by the type's
                                   equivalence: ``answers.same_answer``);
    overturns_correct / _wrong     … and f is right where the vote was wrong / wrong where it was right
    calls, generated tokens / q    the method's calls through round t plus f's own calls

and per cell (backbone × dataset × method) the headroom-vs-lift point: R0 headroom and the lift
of the method's own final answer over its R0 vote, with Pearson and Spearman across cells.
"""
from __future__ import annotations

import math
from collections import defaultdict
from typing import Mapping, Sequence

import polars as pl

from ..answers import gold_correct, same_answer
from . import headroom as hr

AVG = "Avg."
RATES = ["vote_acc", "hit_rate", "headroom", "recovered", "new_correct", "damage", "final_em", "gain",
         "round_vote_acc", "round_hit_rate", "overturns", "overturns_correct", "overturns_wrong", "tie_rate",
         "parse_error_rate", "finalizer_calls_per_q", "finalizer_tokens_per_q", "calls_per_q",
         "completion_tokens_per_q"]

#: (dataset, qid) -> the question's ``answers.Gold``
Golds = Mapping[tuple[str, str], Sequence[str]]
#: (backbone, dataset, method) -> one {qid: (calls, completion tokens)} per round, cumulative
Costs = Mapping[tuple[str, str, str], Sequence[Mapping[str, tuple[int, int]]]]


def cumulative(per_round: Sequence[Mapping[str, tuple[int, int]]]) -> list[dict[str, tuple[int, int]]]:
    """Per-round call counts → counts through each round."""
    out, run = [], defaultdict(lambda: (0, 0))
    for costs in per_round:
        for q, (c, t) in costs.items():
            run[q] = (run[q][0] + c, run[q][1] + t)
        out.append(dict(run))
    return out


def readout_rows(finalized: pl.DataFrame, golds: Golds, costs: Costs) -> list[dict]:
    """One row per backbone × dataset × method × round × finalizer (``finalized`` carries
    ``backbone``); the headroom identity is asserted on every row."""
    rows = []
    if finalized.is_empty():
        return rows
    for (b, d, m), cell in finalized.partition_by(["backbone", "dataset", "method"], as_dict=True,
                                                  maintain_order=True).items():
        r0 = {r["qid"]: r["answers"] for r in cell.filter((pl.col("round") == 0)).to_dicts()}
        spent = cumulative(costs.get((b, d, m), []))
        for (t, f), part in cell.partition_by(["round", "finalizer"], as_dict=True, maintain_order=True).items():
            flags, extra = [], defaultdict(float)
            for r in part.to_dicts():
                g = golds[(d, r["qid"])]
                flags.append(hr.question_flags(r0[r["qid"]], r["prediction"], g))
                final, vote = flags[-1]["final"], gold_correct(r["vote"], g)
                turned = not same_answer(r["prediction"], r["vote"], g.answer_type)
                # a method with no call after round t' < t (everything stopped) spent what it had by t'
                calls, tokens = spent[min(t, len(spent) - 1)].get(r["qid"], (0, 0)) if spent else (0, 0)
                extra["round_vote_acc"] += vote
                extra["round_hit_rate"] += any(gold_correct(a, g) for a in r["answers"])
                extra["overturns"] += turned
                extra["overturns_correct"] += turned and final and not vote
                extra["overturns_wrong"] += turned and vote and not final
                extra["tie_rate"] += r["tie"]
                extra["parse_error_rate"] += bool(r["parse_error"])
                extra["finalizer_calls_per_q"] += r["calls"]
                extra["finalizer_tokens_per_q"] += r["completion_tokens"]
                extra["calls_per_q"] += calls + r["calls"]
                extra["completion_tokens_per_q"] += tokens + r["completion_tokens"]
            row = hr.summarize(flags, f"{b}/{d}/{m}/round {t}/{f}")
            n = max(row["n"], 1)
            per_q = ("finalizer_calls_per_q", "finalizer_tokens_per_q", "calls_per_q", "completion_tokens_per_q")
            row |= {k: (v / n if k in per_q else 100 * v / n) for k, v in extra.items()}
            row.pop("judge_acc")
            rows.append({"backbone": b, "dataset": d, "method": m, "round": t, "finalizer": f, **row})
    return rows


def with_average(rows: list[dict]) -> pl.DataFrame:
    """``rows`` plus macro rows (dataset ``Avg.``: the mean over datasets of each rate, so the
    identity, linear in the rates, still holds — checked)."""
    frame = pl.DataFrame(rows, infer_schema_length=None)
    if frame.is_empty():
        return frame
    keys = ["backbone", "method", "round", "finalizer"]
    avg = (frame.group_by(keys, maintain_order=True)
           .agg(pl.col("n").sum(), *[pl.col(c).mean() for c in RATES])
           .with_columns(pl.lit(AVG).alias("dataset")).select(frame.columns))
    for r in avg.to_dicts():
        if abs(r["gain"] - (r["recovered"] + r["new_correct"] - r["damage"])) > 1e-9:
            raise hr.AccountingError(f"{r['backbone']}/Avg./{r['method']}/round {r['round']}/{r['finalizer']}: "
                                     "macro identity violated")
    return pl.concat([frame, avg])


def with_own_r0(frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` plus ``gain_own_r0``: each row's ``final_em`` minus the same finalizer's ``final_em``
    at round 0 of the same backbone × dataset × method (the readout's lift over its own R0 result,
    WDH §A.10 / Table 13, where ``gain`` is the lift over the plain R0 vote)."""
    if frame.is_empty():
        return frame
    keys = ["backbone", "dataset", "method", "finalizer"]
    r0 = frame.filter(pl.col("round") == 0).select(*keys, pl.col("final_em").alias("_r0"))
    return (frame.join(r0, on=keys, how="left", nulls_equal=True, maintain_order="left")
            .with_columns((pl.col("final_em") - pl.col("_r0")).alias("gain_own_r0")).drop("_r0"))


# ------------------------------------------------------------------- headroom vs lift

def lift_cells(finalized: pl.DataFrame, predictions: pl.DataFrame, golds: Golds) -> list[dict]:
    """Per backbone × dataset × method: R0 headroom and the lift of the method's own final answer
    (its predictions table) over its R0 vote, in percentage points."""
    out = []
    if finalized.is_empty():
        return out
    r0 = finalized.filter((pl.col("round") == 0) & (pl.col("finalizer") == finalized["finalizer"][0]))
    own = {(r["backbone"], r["dataset"], r["method"], r["qid"]): r["prediction"] for r in predictions.to_dicts()}
    for (b, d, m), cell in r0.partition_by(["backbone", "dataset", "method"], as_dict=True,
                                           maintain_order=True).items():
        rs = cell.to_dicts()
        if any((b, d, m, r["qid"]) not in own for r in rs):
            continue
        flags = [hr.question_flags(r["answers"], own[(b, d, m, r["qid"])], golds[(d, r["qid"])]) for r in rs]
        s = hr.summarize(flags, f"{b}/{d}/{m}/own final")
        out.append({"backbone": b, "dataset": d, "method": m, "n": s["n"], "headroom": s["headroom"],
                    "hit_rate": s["hit_rate"], "vote_acc": s["vote_acc"], "final_em": s["final_em"],
                    "lift": s["gain"]})
    return out


def correlations(cells: Sequence[dict]) -> dict:
    """Pearson r and Spearman ρ of headroom vs lift across cells; NaN (with the reason) when
    fewer than 3 cells or either variable is constant."""
    from scipy import stats

    x = [c["headroom"] for c in cells]
    y = [c["lift"] for c in cells]
    if len(cells) < 3:
        return {"n_cells": len(cells), "pearson_r": math.nan, "pearson_p": math.nan, "spearman_rho": math.nan,
                "spearman_p": math.nan, "note": f"{len(cells)} cells: a correlation needs at least 3"}
    if len(set(x)) < 2 or len(set(y)) < 2:
        return {"n_cells": len(cells), "pearson_r": math.nan, "pearson_p": math.nan, "spearman_rho": math.nan,
                "spearman_p": math.nan, "note": "headroom or lift is the same in every cell: no correlation"}
    p, s = stats.pearsonr(x, y), stats.spearmanr(x, y)
    return {"n_cells": len(cells), "pearson_r": float(p.statistic), "pearson_p": float(p.pvalue),
            "spearman_rho": float(s.statistic), "spearman_p": float(s.pvalue), "note": ""}
