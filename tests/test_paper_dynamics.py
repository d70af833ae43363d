"""Debate-dynamics metrics (lmad.paper.dynamics) on a hand-built round history."""
import math

import pytest
from hypothesis import given, strategies as st

from lmad.paper.dynamics import dynamics

# {qid: [(agent correct flags, strict-majority correct) per round]}, three agents, two rounds
HISTORY = {
    "q1": [([0, 0, 1], 0), ([0, 1, 1], 1)],   # wrong majority escaped; one-correct propagated
    "q2": [([1, 1, 0], 1), ([1, 0, 0], 0)],   # correct majority lost
    "q3": [([1, 1, 1], 1), ([1, 1, 1], 1)],   # correct majority kept
    "q4": [([0, 0, 0], 0), ([0, 0, 0], 0)],   # wrong majority stuck
}


def test_dynamics_formulas():
    row = dynamics(HISTORY)
    assert row["agent_acc_r0"] == pytest.approx(100 * 6 / 12) and row["agent_acc_r1"] == pytest.approx(100 * 6 / 12)
    assert row["majority_acc_r0"] == 50 and row["majority_acc_r1"] == 50
    assert row["final_acc_wrong_majority"] == 50 and row["final_acc_correct_majority"] == 50
    assert row["n_even_split"] == 0 and math.isnan(row["final_acc_even_split"])
    # corrections: 1 of 6 wrong agent states; corruptions: 1 of 6 right agent states
    assert row["cpl"] == pytest.approx((1 / 6) / (1 / 6))
    more = dict(HISTORY, q5=[([0, 0, 1], 0), ([1, 1, 1], 1)])   # two more corrections
    assert dynamics(more)["cpl"] == pytest.approx((3 / 8) / (1 / 7))
    assert row["ame"] == pytest.approx(50 - 50)
    assert row["cmp_1vK"] == 100 and row["n_one_correct"] == 1


def test_difficult_questions_are_those_with_at_least_half_wrong_at_round_0():
    """TrueMAD §B.2: difficult = wrong majority ∪ even split at the first response round (round 0)."""
    row = dynamics(HISTORY)
    assert row["n_difficult"] == 2  # q1 (1 of 3 right) and q4 (none)
    assert row["final_acc_difficult"] == 50  # q1's majority escaped, q4's did not
    assert row["final_agent_acc_difficult"] == pytest.approx(100 * 2 / 6)
    assert row["difficult_agent_acc_r0"] == pytest.approx(100 * 1 / 6) and row["difficult_majority_acc_r0"] == 0
    assert row["difficult_agent_acc_r1"] == pytest.approx(100 * 2 / 6) and row["difficult_majority_acc_r1"] == 50
    assert row["final_agent_acc_correct_majority"] == pytest.approx(100 * 4 / 6)
    four = {"even": [([1, 1, 0, 0], 0), ([1, 1, 1, 1], 1)], "easy": [([1, 1, 1, 0], 1), ([1, 1, 1, 0], 1)]}
    row = dynamics(four)
    assert (row["n_even_split"], row["n_difficult"], row["final_acc_difficult"]) == (1, 1, 100)
    assert row["final_agent_acc_difficult"] == 100 and row["difficult_agent_acc_r0"] == 50


def _history(k):
    flags = st.lists(st.integers(0, 1), min_size=k, max_size=k)
    return st.dictionaries(st.sampled_from([f"q{i}" for i in range(8)]),
                           st.lists(st.tuples(flags, st.integers(0, 1)), min_size=2, max_size=2), min_size=1)


@given(st.integers(2, 5).flatmap(_history))
def test_the_difficult_group_combines_wrong_majority_and_even_split(history):
    row = dynamics(history)
    assert row["n_difficult"] == row["n_wrong_majority"] + row["n_even_split"]
    finals = [rs[-1][1] for rs in history.values() if 2 * sum(rs[0][0]) <= len(rs[0][0])]
    assert len(finals) == row["n_difficult"]
    if finals:
        assert row["final_acc_difficult"] == pytest.approx(100 * sum(finals) / len(finals))
    else:
        assert math.isnan(row["final_acc_difficult"]) and math.isnan(row["difficult_agent_acc_r0"])


def _rounds(tmp_path, dataset, rounds):
    """round{t}.parquet of one method on one dataset: ``rounds[t][qid]`` the agents' answers."""
    from lmad.schemas import write_table

    paths = []
    for t, answers in enumerate(rounds):
        path = tmp_path / "results" / "bb" / dataset / "mad" / f"round{t}.parquet"
        write_table("samples", [{"qid": q, "stage": "debate", "round": t, "agent": i, "temperature": 0.0, "seed": 0,
                                 "response": a, "answer": a, "answer_norm": a, "answer_method": "answer_line",
                                 "prompt_tokens": 1, "completion_tokens": 1, "finish_reason": "stop", "cached": False}
                                for q, said in answers.items() for i, a in enumerate(said)], path)
        paths.append(str(path))
    return paths


def test_typed_answers_are_right_and_agree_by_their_answer_type(tmp_path):
    """Math: "1/2" and "0.5" are the gold "\\frac{1}{2}" and one majority; choice: "(B)" and "B"."""
    from lmad.answers import Gold
    from lmad.paper.dynamics import correctness_by_round

    paths = _rounds(tmp_path, "math500", [{"q1": ["1/2", "3", "0.5"]}, {"q1": ["0.5", "1/2", "1/2"]}])
    golds = {("math500", "q1"): Gold(("\\frac{1}{2}",), "math")}
    assert correctness_by_round(golds, paths) == {"q1": [([1, 0, 1], 1), ([1, 1, 1], 1)]}
    # as spans nothing is right: the majority would be wrong, the agents too
    assert correctness_by_round({("math500", "q1"): Gold(("\\frac{1}{2}",), "span")}, paths) == {"q1": [([0, 0, 0], 0)] * 2}
    paths = _rounds(tmp_path, "gpqa-diamond", [{"q1": ["(B)", "C", "B"], "q2": ["(A)", "A", "D"]}])
    golds = {("gpqa-diamond", "q1"): Gold(("B",), "choice"), ("gpqa-diamond", "q2"): Gold(("A",), "choice")}
    assert correctness_by_round(golds, paths) == {"q1": [([1, 0, 1], 1)], "q2": [([1, 1, 0], 1)]}


def test_dynamics_table_reads_each_questions_answer_type(tmp_path):
    import polars as pl

    from lmad.schemas import write_table
    from lmad.stages.paper import dynamics_table

    q = {"qid": "q1", "dataset": "math500", "benchmark": "math500", "question": "?", "context": [],
         "answer": "\\frac{1}{2}", "aliases": [], "qtype": "", "supporting_facts": [], "source": "t",
         "answer_type": "math", "choices": [], "choice_order": [], "survey": ""}
    write_table("questions", [q], tmp_path / "q.parquet")
    paths = _rounds(tmp_path, "math500", [{"q1": ["1/2", "3", "7"]}, {"q1": ["0.5", "1/2", "7"]}])
    dynamics_table([str(tmp_path / "q.parquet")], paths, str(tmp_path / "d.csv"), str(tmp_path / "d.md"), ["bb"], {})
    row = pl.read_csv(tmp_path / "d.csv").row(0, named=True)
    assert (row["agent_acc_r1"], row["majority_acc_r1"], row["n_difficult"], row["final_acc_difficult"]) == (
        pytest.approx(200 / 3), 100, 1, 100)
    assert "Difficult" in (tmp_path / "d.md").read_text()
