"""The headroom accounting identity: holds on consistent flags, raises on a broken count."""
import pytest
from hypothesis import given, strategies as st

from lmad.answers import Gold
from lmad.paper.headroom import AccountingError, check_identity, question_flags, summarize

GOLD = Gold(("Paris", "City of Paris"), "span")


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


def test_headroom_of_a_debate_method_reads_its_own_round_0(tmp_path):
    """dMAD's round 0 (affirmative / negative) differs from the shared proposals: its headroom
    and vote come from its own round 0, SC's from the proposals."""
    from lmad.schemas import write_table
    from lmad.stages.paper import headroom_frame

    d = tmp_path / "results" / "bb" / "hotpotqa"
    q = {"qid": "q1", "dataset": "hotpotqa", "benchmark": "hotpotqa",
         "question": "?", "context": [], "answer": "Paris", "aliases": [],
         "qtype": "bridge", "supporting_facts": [], "source": "t", "answer_type": "span"}
    write_table("questions", [q], tmp_path / "q.parquet")

    def samples(path, answers):
        write_table("samples", [{"qid": "q1", "stage": "s", "round": 0, "agent": i, "temperature": 0.1, "seed": i,
                                 "response": a, "answer": a, "answer_norm": a.lower(), "answer_method": "answer_line",
                                 "prompt_tokens": 1, "completion_tokens": 1, "finish_reason": "stop", "cached": False}
                                for i, a in enumerate(answers)], path)

    samples(d / "samples" / "proposals.parquet", ["Paris", "Paris", "Lyon"])  # shared: vote right
    samples(d / "dmad" / "round0.parquet", ["Lyon", "Paris"])  # dMAD's own: vote wrong (tie → agent 0), hit
    judged = [{"qid": "q1", "dataset": "hotpotqa", "method": m, "prediction": "Paris", "gold": "Paris", "aliases": [],
               "judge_model": "j", "judge_verdict": "correct", "judge_correct": 1.0, "judge_raw": "correct",
               "em": 1.0, "f1": 1.0, "prompt_tokens": 0, "completion_tokens": 0, "finish_reason": "stop",
               "cached": False} for m in ("sc", "dmad")]
    write_table("judgments", judged, d / "judgments.parquet")
    frame = headroom_frame([str(tmp_path / "q.parquet")], [str(d / "samples" / "proposals.parquet")],
                           [str(d / "judgments.parquet")], ["sc", "dmad"], [str(d / "dmad" / "round0.parquet")])
    rows = {r["method"]: r for r in frame.filter(frame["dataset"] == "hotpotqa").to_dicts()}
    assert (rows["sc"]["vote_acc"], rows["sc"]["headroom"], rows["sc"]["recovered"]) == (100, 0, 0)
    assert (rows["dmad"]["vote_acc"], rows["dmad"]["headroom"], rows["dmad"]["recovered"]) == (0, 100, 100)
    assert rows["dmad"]["gain"] == 100


def test_rejected_repair_contains_gold_by_whole_words():
    from lmad.paper.guard_rejections import contains_gold

    def span(*golds):
        return Gold(golds, "span")

    assert contains_gold(["Sir Arthur Gore, 2nd Baronet is the grandfather."], span("Sir Arthur Gore, 2nd Baronet"))
    assert contains_gold(["It was formed in Fujioka, Gunma."], span("Gunma Prefecture", "Fujioka, Gunma"))  # alias
    assert not contains_gold(["Parisian cafés"], span("Paris"))  # whole words only
    assert not contains_gold(["No, they are not."], span("no"))  # yes/no golds say nothing here
    assert not contains_gold(["No, they are not."], Gold(("no",), "yes_no"))
    assert not contains_gold([], span("Paris"))
    assert not contains_gold(["Paris"], None)  # a question without a gold row


def test_typed_questions_count_equivalent_answers_right_and_together():
    """Math: "1/2" and "0.5" are the gold "\\frac{1}{2}" and one vote group (span EM would count
    every proposal wrong and split the vote); choice: "(B)" and "B" alike, "(A)" and "A" too (and
    now as spans as well: an answer the official normalization would erase keys as its own
    lower-cased text, so "(A)" and "A" are one non-empty vote group)."""
    half = Gold(("\\frac{1}{2}",), "math")
    assert question_flags(["1/2", "0.5", "3"], "0.5", half) == {
        "vote": True, "hit": True, "headroom": False, "recovered": False, "new_correct": False, "damage": False,
        "final": True}
    assert question_flags(["3", "0.5", "1/2"], "1/2", half)["vote"]  # 0.5 and 1/2 outvote 3 together
    assert not question_flags(["1/2", "0.5"], "x", Gold(("\\frac{1}{2}",), "span"))["hit"]  # as spans: no hit at all
    b = Gold(("B",), "choice")
    assert question_flags(["(B)", "C", "B"], "(B)", b)["vote"] and question_flags(["C", "C", "(B)"], "B", b)["recovered"]
    a = Gold(("A",), "choice")
    assert question_flags(["(A)", "A", "C"], "A", a)["vote"]
    # as spans "(A)" and "A" are not erased to "" (which would leave "C" the vote): they outvote "C"
    assert question_flags(["(A)", "A", "C"], "A", Gold(("A",), "span"))["vote"]


span = st.sampled_from(["Paris", "paris", "the City of Paris", "Lyon", "", "Nice."])


@given(st.lists(span, min_size=1, max_size=5), span)
def test_span_flags_are_official_em_of_the_span_vote(proposals, prediction):
    from lmad.answers import majority_vote
    from lmad.answers.official import exact_match

    want = {"vote": bool(exact_match(majority_vote(proposals, "span")[0], GOLD)),
            "hit": any(exact_match(p, GOLD) for p in proposals), "final": bool(exact_match(prediction, GOLD))}
    for gold in (GOLD, Gold(GOLD.answers, "span", "musique"), Gold(GOLD.answers, "yes_no", "musique")):
        flags = question_flags(proposals, prediction, gold)
        assert {k: flags[k] for k in want} == want
