"""The headroom accounting identity: holds on consistent flags, raises on a broken count."""
import pytest

from lmad.paper.headroom import AccountingError, check_identity, question_flags, summarize

GOLD = ["Paris", "City of Paris"]


def test_flags_and_identity_on_a_consistent_fixture():
    cases = [
        (["Paris", "Paris", "Lyon"], "Paris"),        # vote right, final right
        (["Lyon", "Lyon", "the city of Paris"], "City of Paris"),  # recovered (alias)
        (["Lyon", "Lyon", "Nice"], "Paris"),          # new-correct
        (["Paris", "Paris", "Nice"], "Nice"),         # damage
        (["Lyon", "Lyon", "Paris"], "Lyon"),          # headroom left unrecovered
    ]
    flags = [question_flags(p, f, GOLD) for p, f in cases]
    assert flags[1]["recovered"] and flags[2]["new_correct"] and flags[3]["damage"] and flags[4]["headroom"]
    row = summarize(flags, "fixture", judge_acc=60.0)
    assert row["vote_acc"] == 40 and row["final_em"] == 60 and row["hit_rate"] == 80
    assert row["gain"] == pytest.approx(row["recovered"] + row["new_correct"] - row["damage"]) == 20


def test_identity_violation_raises():
    broken = {"n": 3, "vote": 1, "hit": 2, "headroom": 1, "recovered": 1, "new_correct": 0, "damage": 0, "final": 1}
    with pytest.raises(AccountingError, match="gain 0"):
        check_identity(broken, "broken")
