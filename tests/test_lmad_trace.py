"""The LMAD trace (lmad.protocols.localized_debate.trace) built from stage frames: its accounting
identity on any tables, the state carried between iterations, and the edges (a question never
localized, calls without a commit decision, a question missing from the questions table)."""
import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st

from lmad.protocols.localized_debate.trace import CALL_TABLES, build_trace, lmad_prediction_rows
from lmad.schemas import to_frame

TABLE = {"samples": "samples", "chains": "lmad_chains", "localizations": "lmad_localizations",
         "positions": "lmad_positions", "repairs": "lmad_repairs", "relations": "lmad_relations",
         "commits": "lmad_commits"}
QIDS = ["q1", "q2", "q3"]


def iteration(rows: dict[str, list[dict]]) -> dict[str, pl.DataFrame]:
    return {arg: to_frame(TABLE[arg], rows.get(arg, [])) for arg in TABLE}


def commit(qid: str, k: int, committed: list[str]) -> dict:
    return {"qid": qid, "iteration": k, "policy": "guarded", "answers": ["a", "b"], "agreed": False,
            "repair_nodes": [], "quotes": [], "checks": [], "admitted": None, "committed": committed,
            "stop_reason": None, "prediction": "a"}


def call(qid: str, agent: int, finish: str, prompt: int, completion: int) -> dict:
    return {"qid": qid, "agent": agent, "round": 1, "finish_reason": finish, "prompt_tokens": prompt,
            "completion_tokens": completion, "nodes": ["n"], "fallback": "", "position": "p"}


calls = st.lists(st.tuples(st.sampled_from(sorted(CALL_TABLES)), st.sampled_from(QIDS), st.integers(0, 2),
                           st.sampled_from(["stop", "length", "skipped"]), st.integers(0, 50), st.integers(0, 50)),
                 max_size=25)


@given(st.lists(st.tuples(st.sets(st.sampled_from(QIDS), min_size=1), calls), min_size=1, max_size=3))
def test_trace_accounts_for_every_call_and_carries_the_committed_premises(iterations):
    per_iteration, expected, located = [], [], set()
    for k, (active, made) in enumerate(iterations):
        rows: dict[str, list[dict]] = {"commits": [commit(q, k, [f"p{k}-{q}"]) for q in sorted(active)]}
        for table, qid, agent, finish, prompt, completion in made:
            if qid in active:
                rows.setdefault(table, []).append(call(qid, agent, finish, prompt, completion))
        located |= {(k, r["qid"]) for r in rows.get("localizations", [])}
        expected += [r for table in CALL_TABLES for r in rows.get(table, []) if r["finish_reason"] != "skipped"]
        per_iteration.append(iteration(rows))
    trace = to_frame("lmad_trace", build_trace(dict.fromkeys(QIDS, "hotpotqa"), "lmad", per_iteration))
    assert trace.height == sum(len(active) for active, _ in iterations)
    assert trace["calls"].sum() == len(expected) == trace["call_log"].list.len().sum()
    assert trace["prompt_tokens"].sum() == sum(r["prompt_tokens"] for r in expected)
    assert trace["completion_tokens"].sum() == sum(r["completion_tokens"] for r in expected)
    assert trace["final_iteration"].to_list() == [k == len(iterations) - 1 for k in trace["iteration"]]
    for q in QIDS:
        mine = trace.filter(pl.col("qid") == q).sort("iteration").to_dicts()
        for before, row in zip([None, *mine], mine):
            assert row["committed_before"] == (before["committed_after"] if before else [])
            if (row["iteration"], q) not in located:  # no witness, no positions
                assert row["positions"] == [] and row["witness"] == [] and row["conflict"] is None
    predictions = lmad_prediction_rows(
        dict.fromkeys(QIDS, "hotpotqa"), "lmad",
        [{"qid": q, "active": False, "stop_reason": "max_iterations", "stop_iteration": 0, "prediction": "a",
          "prediction_norm": "a"} for q in QIDS], trace)
    assert sum(p["calls"] for p in predictions) == len(expected)


def test_positions_start_from_the_witness_claims_then_each_round_in_agent_order():
    rows = {"commits": [commit("q1", 0, [])],
            "localizations": [{"qid": "q1", "conflict": "c", "witness": [0, 1], "witness_fallback": ["", ""],
                               "witness_claims": ["w0", "w1"], "segments": [["s"]], "finish_reason": "stop",
                               "prompt_tokens": 3, "completion_tokens": 4}],
            "positions": [{**call("q1", agent, "stop", 1, 1), "round": r, "position": f"r{r}a{agent}"}
                          for r in (2, 1) for agent in (1, 0)],
            "chains": [{**call("q1", agent, "stop", 1, 1), "nodes": [f"n{agent}"]} for agent in (1, 0)]}
    [row] = build_trace({"q1": "hotpotqa"}, "lmad", [iteration(rows)]).to_dicts()
    assert row["positions"] == [["w0", "w1"], ["r1a0", "r1a1"], ["r2a0", "r2a1"]]
    assert row["chains"] == [["n0"], ["n1"]] and row["premises"] == [[], []] and row["graph_fallbacks"] == ["", ""]
    assert row["witness"] == [0, 1] and row["conflict"] == "c"
    assert row["calls"] == 7 and [c["role"] for c in row["call_log"]][:3] == ["extractor"] * 2 + ["localizer"]


def test_calls_without_a_commit_decision_fail_by_iteration():
    rows = {"commits": [commit("q1", 0, [])], "repairs": [call("q2", 0, "stop", 1, 1)]}
    with pytest.raises(ValueError, match=r"iteration 0: calls for questions without a commit decision: \['q2'\]"):
        build_trace(dict.fromkeys(QIDS, "hotpotqa"), "lmad", [iteration(rows)])


def test_a_decision_on_a_question_not_in_the_questions_table_fails():
    with pytest.raises(ValueError, match="not in the questions table"):
        build_trace({"q1": "hotpotqa"}, "lmad", [iteration({"commits": [commit("q9", 0, [])]})])
