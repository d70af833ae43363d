"""The cost table's LMAD columns (lmad.stages.paper.lmad_call_summary) on drawn traces, against a
plain reading of their definition: last-iteration auxiliary calls and generated tokens per question
(every question of the trace counted, mean per dataset, macro-averaged) and each role's truncation
rate (None for a role without calls)."""
import tempfile
from pathlib import Path

import polars as pl
from hypothesis import given
from hypothesis import strategies as st

from lmad import layout
from lmad.schemas import STORED, write_table
from lmad.stages.paper import ROLES, lmad_call_summary
from lmad.stats import macro_average

DATASETS, METHODS, QIDS = ["hotpotqa", "musique"], ["lmad", "lmad-dag"], ["q1", "q2", "q3"]

call = st.fixed_dictionaries({"role": st.sampled_from(ROLES), "agent": st.integers(0, 2),
                              "finish_reason": st.sampled_from(["stop", "length", None]),
                              "prompt_tokens": st.integers(0, 9), "completion_tokens": st.integers(0, 9)})
rows = st.lists(st.tuples(st.sampled_from(DATASETS), st.sampled_from(METHODS), st.sampled_from(QIDS),
                          st.integers(0, 2), st.booleans(), st.lists(call, max_size=4)),
                min_size=1, max_size=20, unique_by=lambda r: r[:4])


def expected(drawn) -> dict:
    out = {}
    for m in {r[1] for r in drawn}:
        mine = [r for r in drawn if r[1] == m]
        per_q: dict[tuple[str, str], list[int]] = {}
        roles = {r: [0, 0] for r in ROLES}
        for d, _, q, _, final, log in mine:
            tail = per_q.setdefault((d, q), [0, 0])
            for c in log:
                roles[c["role"]][0] += 1
                roles[c["role"]][1] += c["finish_reason"] == "length"
                if final and c["role"] != "solver":
                    tail[0] += 1
                    tail[1] += c["completion_tokens"]
        by_d: dict[str, list[list[int]]] = {}
        for (d, _), v in per_q.items():
            by_d.setdefault(d, []).append(v)
        out[("bb", m)] = {
            "last_iteration_aux_calls_per_q": macro_average({d: sum(v[0] for v in vs) / len(vs) for d, vs in by_d.items()}),
            "last_iteration_aux_completion_tokens_per_q": macro_average(
                {d: sum(v[1] for v in vs) / len(vs) for d, vs in by_d.items()}),
            **{f"truncated_{r}": (100 * n_len / n if n else None) for r, (n, n_len) in roles.items()}}
    return out


def write_traces(root: Path, drawn) -> list[str]:
    schema = STORED["lmad_trace"]
    paths = []
    for d in DATASETS:
        for m in METHODS:
            mine = [r for r in drawn if r[0] == d and r[1] == m]
            if not mine:
                continue
            frame = pl.DataFrame([{"qid": q, "dataset": d, "method": m, "iteration": k, "final_iteration": final,
                                   "call_log": log} for _, _, q, k, final, log in mine],
                                 schema={k: schema[k] for k in ("qid", "dataset", "method", "iteration",
                                                                "final_iteration", "call_log")})
            frame = frame.with_columns(pl.lit(None, dtype).alias(name) for name, dtype in schema.items()
                                       if name not in frame.columns)
            path = root / layout.lmad_trace("bb", d, m)
            path.parent.mkdir(parents=True, exist_ok=True)
            write_table("lmad_trace", frame, path)
            paths.append(str(path))
    return paths


@given(rows)
def test_lmad_call_summary_matches_its_definition(drawn):
    with tempfile.TemporaryDirectory() as tmp:
        got = lmad_call_summary(write_traces(Path(tmp), drawn))
    want = expected(drawn)
    assert got.keys() == want.keys()
    for key, values in want.items():
        for column, value in values.items():
            assert (got[key][column] is None) == (value is None), (key, column)
            if value is not None:
                assert abs(got[key][column] - value) < 1e-9, (key, column, got[key][column], value)


def test_no_traces_no_lmad_columns():
    assert lmad_call_summary([]) == {}
