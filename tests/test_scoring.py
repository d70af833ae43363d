"""The scorer against the official scripts, case by case (values computed by hand from
hotpot_evaluate_v1.py — also 2WikiMultiHopQA's script — MuSiQue's metrics/answer.py and
StrategyQA's accuracy), plus properties that hold for any strings."""
import pytest
from hypothesis import given, strategies as st

from lmad.answers.official import score, scoring_rules

ENTITY = ["George V", "King George V"]
RUPEE = ["Indian rupee", "rupee", "INR", "₹"]

# (prediction, golds, dataset, official EM, official F1)
CASES = [
    # HotpotQA: "No." + number is not the answer "no"; the yes/no special case of F1
    ("No. 10 Downing Street", ["10 Downing Street"], "hotpotqa", 0, 6 / 7),
    ("No", ["No. 5"], "hotpotqa", 0, 0),
    ("Yes, Minister", ["Yes Minister"], "hotpotqa", 1, 1),
    ("No, Chief of Protocol", ["Chief of Protocol"], "hotpotqa", 0, 6 / 7),
    ("yes", ["yes"], "hotpotqa", 1, 1),
    ("Yes.", ["yes"], "hotpotqa", 1, 1),
    ("Yes, they are.", ["yes"], "hotpotqa", 0, 0),
    ("no", ["yes"], "hotpotqa", 0, 0),
    ("The Eiffel Tower", ["Eiffel Tower"], "hotpotqa", 1, 1),
    ("Eiffel", ["Eiffel Tower"], "hotpotqa", 0, 2 / 3),
    ("Barack Obama", ["Barack Hussein Obama"], "hotpotqa", 0, 0.8),
    ("New York City, USA", ["New York"], "hotpotqa", 0, 2 / 3),
    ("U.S.A.", ["USA"], "hotpotqa", 1, 1),
    ("rock-and-roll", ["rock and roll"], "hotpotqa", 0, 0),
    ("", ["Paris"], "hotpotqa", 0, 0),
    ("noanswer", ["noanswer"], "hotpotqa", 1, 1),
    ("1990", ["1990"], "hotpotqa", 1, 1),
    ("in 1990", ["1990"], "hotpotqa", 0, 2 / 3),
    ("Smith's", ["Smiths"], "hotpotqa", 1, 1),
    ("an apple", ["Apple"], "hotpotqa", 1, 1),
    ("Theater", ["the Theater"], "hotpotqa", 1, 1),
    ("No Doubt band", ["No Doubt"], "hotpotqa", 0, 0.8),
    # 2WikiMultiHopQA: HotpotQA's rules, max over the answer and its aliases (and demonyms)
    ("George V", ENTITY, "2wikimultihopqa", 1, 1),
    ("King George", ENTITY, "2wikimultihopqa", 0, 0.8),
    ("no", ["no"], "2wikimultihopqa", 1, 1),
    ("No, they are not", ["no"], "2wikimultihopqa", 0, 0),
    ("American", ["United States", "American", "USA"], "2wikimultihopqa", 1, 1),
    ("Cincinnati, Ohio", ["Cincinnati"], "2wikimultihopqa", 0, 2 / 3),
    # MuSiQue: SQuAD-style EM/F1, no yes/no special case, max over answer + aliases
    ("rupee", RUPEE, "musique", 1, 1),
    ("Indian rupees", RUPEE, "musique", 0, 0.5),
    ("no", ["no"], "musique", 1, 1),
    ("yes", ["no idea"], "musique", 0, 0),
    ("no", ["no idea"], "musique", 0, 2 / 3),
    ("no", ["No. 5"], "musique", 0, 2 / 3),
    ("₹", RUPEE, "musique", 1, 1),
    ("!!!", ["Salzach"], "musique", 0, 0),
    ("Salzach river", ["Salzach", "Salzach river", "the Salzach"], "musique", 1, 1),
    ("the Netherlands", ["Netherlands", "the Netherlands", "Holland"], "musique", 1, 1),
    ("Kingdom of the Netherlands", ["Netherlands"], "musique", 0, 0.5),
    ("Stephen Edwin King", ["Stephen King", "Stephen Edwin King"], "musique", 1, 1),
    # StrategyQA: yes/no exact match of the prediction as written (F1 = EM)
    ("yes", ["yes"], "strategyqa", 1, 1),
    ("Yes.", ["yes"], "strategyqa", 1, 1),
    ("no", ["yes"], "strategyqa", 0, 0),
    ("Yes, they are.", ["yes"], "strategyqa", 0, 0),
    ("True", ["yes"], "strategyqa", 0, 0),
    ("yes indeed", ["yes"], "strategyqa", 0, 0),
]


def test_the_table_is_large_enough():
    assert len(CASES) >= 40


@pytest.mark.parametrize("pred, golds, dataset, em, f1", CASES)
def test_official_values(pred, golds, dataset, em, f1):
    got_em, got_f1 = score(pred, golds, scoring_rules(dataset))
    assert got_em == em
    assert got_f1 == pytest.approx(f1)


def test_rules_per_benchmark_and_shard():
    assert scoring_rules("hotpotqa") == scoring_rules("2wikimultihopqa") == "hotpotqa"
    assert scoring_rules("musique.shard3") == "musique"
    assert scoring_rules("strategyqa") == "yes_no"
    with pytest.raises(ValueError, match="no official scoring rules"):
        scoring_rules("triviaqa")


@given(pred=st.text(max_size=60), golds=st.lists(st.text(max_size=30), max_size=4),
       rules=st.sampled_from(["hotpotqa", "musique", "yes_no"]))
def test_scores_are_bounded_and_em_is_rule_independent(pred, golds, rules):
    em, f1 = score(pred, golds, rules)
    assert em in (0.0, 1.0) and 0.0 <= f1 <= 1.0
    assert em == score(pred, golds, "hotpotqa")[0]  # every official script compares the same normalization


@given(st.text(max_size=40), st.text(max_size=40))
def test_the_prediction_is_never_rewritten(pred, gold):
    # a prediction and the prediction with a leading "No." differ unless both normalize the same
    em, _ = score(f"No. {pred}", [gold], "hotpotqa")
    assert em == score(f"no {pred}", [gold], "hotpotqa")[0]
