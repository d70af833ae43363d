"""Debate-dynamics metrics (lmad.paper.dynamics) on a hand-built round history."""
import math

import pytest

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
