"""The LMAD trace and final predictions, assembled from the saved stage tables only.

One trace row per question per iteration in which it was active: the state it started
from, the answers, chains, conflict, witnesses (with fallbacks), segments, positions of
every round (round 0 = the witness claims), the proposed repair and quotations, every
guard check, the admission and the stop. Each row carries the cost of the calls made
for that question in that iteration; a question's prediction carries the sum.

Accounting identity, checked on every run: every call row of an iteration belongs to a
question that has a commit decision in that iteration, so the trace's calls add up to
all the calls in the stage tables.
"""
from __future__ import annotations

from collections import defaultdict

from ...call_accounting import COST_COLUMNS, cost_per_question

# stage table → the role of its calls
CALL_TABLES = {"samples": "solver", "chains": "extractor", "localizations": "localizer", "positions": "debater",
               "repairs": "resolver", "relations": "relation"}


def _calls(tables: dict[str, list[dict]], name: str) -> list[dict]:
    """A stage table's rows that stand for a model call: graph LMAD localizes without one ("skipped")."""
    return [r for r in tables.get(name, []) if r["finish_reason"] != "skipped"]


def iteration_cost(tables: dict[str, list[dict]]) -> tuple[dict[str, dict[str, int]], dict[str, list[dict]]]:
    """Per question: summed cost, and the call log (role, agent, finish reason, tokens)."""
    log: dict[str, list[dict]] = defaultdict(list)
    for name, role in CALL_TABLES.items():
        for r in _calls(tables, name):
            log[r["qid"]].append({"role": role, "agent": r.get("agent", -1), "finish_reason": r["finish_reason"],
                                  "prompt_tokens": r["prompt_tokens"], "completion_tokens": r["completion_tokens"]})
    return cost_per_question(r for name in CALL_TABLES for r in _calls(tables, name)), log


def build_trace(questions: dict[str, dict], method: str, per_iteration: list[dict[str, list[dict]]]) -> list[dict]:
    """``per_iteration[k]`` holds iteration k's rows of samples, chains, localizations,
    positions, repairs, relations and commits."""
    rows = []
    committed_before: dict[str, list[str]] = defaultdict(list)
    for k, t in enumerate(per_iteration):
        cost, call_log = iteration_cost(t)
        decided = {c["qid"] for c in t["commits"]}
        stray = sorted(set(cost) - decided)
        if stray:
            raise ValueError(f"iteration {k}: calls for questions without a commit decision: {stray[:5]}")
        chains: dict[str, list[dict]] = defaultdict(list)
        for r in sorted(t["chains"], key=lambda r: r["agent"]):
            chains[r["qid"]].append(r)
        locs = {r["qid"]: r for r in t["localizations"]}
        turns: dict[str, dict[int, dict[int, str]]] = defaultdict(lambda: defaultdict(dict))
        for r in t["positions"]:
            turns[r["qid"]][r["round"]][r["agent"]] = r["position"]
        for c in sorted(t["commits"], key=lambda c: c["qid"]):
            qid = c["qid"]
            loc = locs.get(qid)
            positions = []
            if loc is not None:
                positions = [list(loc["witness_claims"])] + [
                    [by_agent[a] for a in sorted(by_agent)] for _, by_agent in sorted(turns[qid].items())]
            rows.append({
                "qid": qid, "dataset": questions[qid]["dataset"], "method": method, "iteration": k,
                "committed_before": committed_before[qid], "answers": c["answers"], "agreed": c["agreed"],
                "chains": [r["nodes"] for r in chains[qid]], "chain_fallbacks": [r["fallback"] for r in chains[qid]],
                "conflict": loc["conflict"] if loc else None, "witness": loc["witness"] if loc else [],
                "witness_fallback": loc["witness_fallback"] if loc else [], "segments": loc["segments"] if loc else [],
                "positions": positions, "repair_nodes": c["repair_nodes"], "quotes": c["quotes"],
                "checks": c["checks"], "admitted": c["admitted"], "committed_after": c["committed"],
                "stop_reason": c["stop_reason"], "prediction": c["prediction"], **cost[qid],
                "call_log": call_log[qid], "final_iteration": k == len(per_iteration) - 1,
                # the graphs (graph LMAD; a chain method's premises are empty)
                "premises": [r["premises"] or [] for r in chains[qid]],
                "sources": [r["sources"] or [] for r in chains[qid]],
                "graph_fallbacks": [r["graph_fallback"] or "" for r in chains[qid]],
                "witnesses": (loc["witnesses"] or []) if loc else [],
                "segment_indices": (loc["segment_indices"] or []) if loc else [],
                "conflicts": (loc["conflicts"] or []) if loc else [],
            })
            committed_before[qid] = c["committed"]
    return rows


def lmad_prediction_rows(questions: dict[str, dict], method: str, final_state: list[dict], trace: list[dict]) -> list[dict]:
    if {s["qid"] for s in final_state} != set(questions):
        raise ValueError("the final LMAD state does not cover exactly the questions")
    totals: dict[str, dict[str, int]] = defaultdict(lambda: dict.fromkeys(COST_COLUMNS, 0))
    for r in trace:
        for key in COST_COLUMNS:
            totals[r["qid"]][key] += r[key]
    out = []
    for s in sorted(final_state, key=lambda s: s["qid"]):
        if s["active"] or s["stop_reason"] is None:
            raise ValueError(f"question {s['qid']} is still active after the last iteration")
        out.append({"qid": s["qid"], "dataset": questions[s["qid"]]["dataset"], "method": method,
                    "prediction": s["prediction"], "prediction_norm": s["prediction_norm"],
                    "stop_reason": s["stop_reason"], "stop_round": s["stop_iteration"], **totals[s["qid"]]})
    return out
