"""An LMAD iteration's state file (lmad.stages.lmad_inputs.Units.state): the active questions'
rows come back as dicts and the stopped ones as a frame that passes through to the next state;
written back, the next state file is the one a dict of every row would have given, and a unit
whose rows are not one per question fails naming the unit."""
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lmad.protocols.localized_debate import controller
from lmad.schemas import read_table, to_frame, write_table, write_units
from lmad.stages.lmad_inputs import Units

UNITS = [("hotpotqa", "lmad"), ("hotpotqa", "lmad-dag")]
STOPS = [None, "agreement", "budget", "stalled"]
text = st.text(alphabet="abc xyz", max_size=6)


def question(qid):
    return {"qid": qid, "dataset": "hotpotqa", "benchmark": "hotpotqa", "question": f"q {qid}?", "context": [],
            "answer": "x", "aliases": [], "qtype": "bridge", "supporting_facts": [], "source": "test",
            "answer_type": "span"}


def state_row(qid, active, committed, stop, prediction):
    return {"qid": qid, "active": active, "committed": committed, "stop_reason": None if active else stop,
            "stop_iteration": None if active else 1, "prediction": None if active else prediction,
            "prediction_norm": None if active else prediction}


@st.composite
def unit_states(draw):
    """Each unit's state rows: 1-6 questions, any mix of active and stopped (all of one kind included)."""
    out = []
    for _ in UNITS:
        qids = draw(st.lists(st.sampled_from([f"q{i}" for i in range(8)]), min_size=1, max_size=6, unique=True))
        out.append([state_row(q, draw(st.booleans()), draw(st.lists(text, max_size=3)), draw(st.sampled_from(STOPS)),
                              draw(text)) for q in qids])
    return out


def files(tmp_path, states):
    questions = []
    for u, rows in enumerate(states):
        path = tmp_path / f"questions{u}.parquet"
        write_table("questions", [question(r["qid"]) for r in rows], path)
        questions.append(str(path))
    state = tmp_path / "state.parquet"
    write_units("lmad_state", [(d, m, rows) for (d, m), rows in zip(UNITS, states)], state)
    return questions, str(state)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(states=unit_states())
def test_active_rows_as_dicts_and_stopped_ones_pass_through_unchanged(tmp_path, states):
    questions, state = files(tmp_path, states)
    us = Units(UNITS, questions)
    entering = us.state(state)
    for rows, (active, stopped) in zip(states, entering):
        assert sorted(active, key=lambda r: r["qid"]) == sorted((r for r in rows if r["active"]), key=lambda r: r["qid"])
        assert sorted(stopped["qid"].to_list()) == sorted(r["qid"] for r in rows if not r["active"])
    # the commit's write: the active rows' next states as dicts, the stopped ones as read
    moved = [[controller.initial_state([r["qid"]])[0] | {"committed": r["committed"] + ["p"]} for r in active]
             for active, _ in entering]
    us.write("lmad_state", [pl.concat([to_frame("lmad_state", m), stopped], how="vertical")
                            for m, (_, stopped) in zip(moved, entering)], str(tmp_path / "next.parquet"), {})
    as_dicts = [m + [r for r in rows if not r["active"]] for m, rows in zip(moved, states)]
    write_units("lmad_state", [(d, m, rows) for (d, m), rows in zip(UNITS, as_dicts)], tmp_path / "dicts.parquet")
    assert read_table("lmad_state", tmp_path / "next.parquet", keys=True).equals(
        read_table("lmad_state", tmp_path / "dicts.parquet", keys=True))


def test_iteration_zero_is_every_question_active_without_a_frame(tmp_path):
    questions, _ = files(tmp_path, [[state_row("b", True, [], None, "")], [state_row("a", True, [], None, "")]])
    assert Units(UNITS, questions).state(None) == [(controller.initial_state(["b"]), None),
                                                    (controller.initial_state(["a"]), None)]


@pytest.mark.parametrize("change", ["missing", "extra", "duplicate"])
def test_a_state_that_is_not_one_row_per_question_fails_naming_the_unit(tmp_path, change):
    rows = [state_row("q1", True, [], None, ""), state_row("q2", False, ["c"], "agreement", "x")]
    questions, _ = files(tmp_path, [rows, rows])
    bad = {"missing": rows[:1], "extra": rows + [state_row("q3", True, [], None, "")],
           "duplicate": rows + rows[:1]}[change]
    state = tmp_path / "bad_state.parquet"
    write_units("lmad_state", [(*UNITS[0], rows), (*UNITS[1], bad)], state)
    with pytest.raises(ValueError, match="hotpotqa/lmad-dag"):
        Units(UNITS, questions).state(str(state))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(per_file=st.lists(st.lists(st.one_of(st.none(), unit_states()), min_size=1, max_size=1), min_size=0, max_size=4),
       units=st.permutations(UNITS + [("hotpotqa", "lmad-always")]))
def test_every_iterations_rows_of_a_unit_are_each_files_rows_in_file_order(tmp_path, per_file, units):
    """lmad_predict reads each stage table's iteration files once (schemas.read_unit_files): a
    unit's frame is its rows of file 0, then file 1, ..., each with the file's position; a unit
    absent from a file (or from every file, or no file at all) has no rows there."""
    from lmad.schemas import TABLES, read_unit_files, read_unit_frames

    paths = []
    for k, [states] in enumerate(per_file):
        path = tmp_path / f"iter{k}" / "state.parquet"
        write_units("lmad_state", [(d, m, rows) for (d, m), rows in zip(UNITS, states or [])], path)
        paths.append(str(path))
    got = read_unit_files("lmad_state", paths, units, "_k")
    assert len(got) == len(units)
    for u, frame in enumerate(got):
        parts = [f.with_columns(pl.lit(k, dtype=pl.Int64).alias("_k"))
                 for k, p in enumerate(paths) for f in [read_unit_frames("lmad_state", p, units)[u]]]
        expected = pl.concat(parts) if parts else frame.clear()
        assert frame.schema == pl.Schema({**TABLES["lmad_state"][0], "_k": pl.Int64})
        assert frame.equals(expected)
