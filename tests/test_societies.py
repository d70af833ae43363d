"""Coverage-selected societies (lmad.societies): greedy maximum coverage is exact where it should
be and beats top-K where complementary agents exist, SC-Greedy needs no labels, the splits are
disjoint and seeded, and seeded weight perturbation is reproducible and changes outputs."""
import itertools

import pytest
from hypothesis import given, strategies as st

from lmad import societies as so
from lmad.answers import Gold
from lmad.backends.perturb import perturb_suffix, perturb_weights

# agents x questions: A is the best single agent, B overlaps A, C covers what A misses
HAND = {"A": [1, 1, 1, 1, 0, 0], "B": [1, 1, 1, 0, 0, 0], "C": [0, 0, 0, 0, 1, 1], "D": [0, 0, 0, 1, 0, 0]}


def best_coverage(scores, k, threshold=0.5):
    return max(so.coverage(scores, c, threshold) for c in itertools.combinations(range(len(scores)), k))


def test_ac_greedy_picks_the_complementary_agent_where_top_k_takes_the_overlapping_one():
    scores = [list(map(float, v)) for v in HAND.values()]
    picked = so.greedy(scores, 2)
    assert [a for a, _ in picked] == [0, 2] and [m for _, m in picked] == [4, 2]
    assert so.coverage(scores, [0, 2]) == best_coverage(scores, 2) == 6
    assert so.top_k(scores, 2) == [0, 1] and so.coverage(scores, [0, 1]) == 4


@given(st.lists(st.sets(st.integers(0, 11), max_size=6), min_size=1, max_size=6), st.integers(1, 3))
def test_greedy_is_exact_on_disjoint_coverage_and_within_1_minus_1_over_e(sets, k):
    n = 12
    scores = [[1.0 if q in s else 0.0 for q in range(n)] for s in sets]
    k = min(k, len(scores))
    got = so.coverage(scores, [a for a, _ in so.greedy(scores, k)])
    best = best_coverage(scores, k)
    assert got >= (1 - 1 / 2.718281828) * best - 1e-9
    disjoint = [set() for _ in sets]
    seen = set()
    for i, s in enumerate(sets):
        disjoint[i] = s - seen
        seen |= s
    dscores = [[1.0 if q in s else 0.0 for q in range(n)] for s in disjoint]
    assert so.coverage(dscores, [a for a, _ in so.greedy(dscores, k)]) == best_coverage(dscores, k)


def test_sc_greedy_needs_no_labels_and_picks_a_complementary_agent():
    """Agents 0-2 agree with each other on q0, q1; agents 3-4 on q2, q3. Support coverage picks one
    of each group; top-K by support takes two of the same group."""
    answers = [["rome", "oslo", "x", "x2"], ["rome", "oslo", "y", "y2"], ["rome", "oslo", "z", "z2"],
               ["bern", "kyiv", "p", "q"], ["riga", "lima", "p", "q"]]
    support = so.support_scores(answers, ["span"] * 4)
    assert support[0] == [0.5, 0.5, 0.0, 0.0] and support[3] == [0.0, 0.0, 0.25, 0.25]
    picked = [a for a, _ in so.greedy(support, 2, threshold=0.25)]
    assert picked == [0, 3] and so.coverage(support, picked, 0.25) == 4
    assert so.top_k(support, 2) == [0, 1] and so.coverage(support, [0, 1], 0.25) == 2


@given(st.lists(st.lists(st.sampled_from(["", "a", "b", "A.", "c"]), min_size=3, max_size=3), min_size=1,
                max_size=5))
def test_support_is_a_share_and_empty_answers_support_nothing(answers):
    for row, scores in zip(answers, so.support_scores(answers, ["span"] * 3)):
        assert all(0.0 <= s <= 1.0 for s in scores)
        assert all(s == 0.0 for x, s in zip(row, scores) if not x)


def test_pool_and_evaluation():
    agents = so.pool_agents([0.1, 0.9], ["plain", "skeptic"], ["standard", "verify"], [{"seed": 3, "scale": 0.01}])
    assert len(agents) == 2 * 2 * 2 + 2 and len({a.name for a in agents}) == len(agents)
    assert agents[-1].perturb == {"seed": 3, "scale": 0.01} and agents[0].perturb is None
    ev = so.evaluate([["Paris", "Lyon"], ["Lyon", "Lyon"], ["Paris", "Nice"]],
                     [Gold(("Paris",), "span"), Gold(("Nice",), "span")], [0, 1, 2])
    assert ev == {"n": 2, "hit": 100.0, "vote": 50.0, "member_acc": 50.0}  # q1: only the minority (Nice) is right


def test_seeded_weight_perturbation_is_reproducible_and_changes_outputs():
    import torch

    def model():
        torch.manual_seed(0)
        return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3))

    x = torch.ones(1, 4)
    base = model()(x)
    m1, m2, m3, m0 = model(), model(), model(), model()
    assert perturb_weights(m1, 7, 0.05) == 4 and perturb_weights(m2, 7, 0.05) == 4
    perturb_weights(m3, 8, 0.05)
    assert perturb_weights(m0, 7, 0.0) == 0
    assert torch.equal(m1(x), m2(x)) and not torch.equal(m1(x), base) and not torch.equal(m1(x), m3(x))
    assert torch.equal(m0(x), base)
    assert perturb_suffix({"seed": 7, "scale": 0.05}) != perturb_suffix({"seed": 8, "scale": 0.05})
    assert perturb_suffix(None) == ""


@given(st.floats(allow_nan=True, allow_infinity=True), st.floats(allow_nan=True, allow_infinity=True),
       st.integers(1, 64))
def test_matched_tokens_sample_count_is_within_one_and_the_cap(budget, per_sample, cap):
    from lmad.stages.matched import matched_samples

    n = matched_samples(budget, per_sample, cap)
    assert 1 <= n <= cap
    assert matched_samples(900.0, 100.0, 64) == 9 and matched_samples(50.0, 100.0, 64) == 1


def test_typed_questions_are_covered_voted_and_supported_by_their_answer_type():
    """Math: "1/2" and "0.5" are the gold "\\frac{1}{2}" and agree; choice: "(B)" and "B"."""
    answers = [["1/2", "(B)"], ["0.5", "C"], ["3", "B"]]
    golds = [Gold(("\\frac{1}{2}",), "math"), Gold(("B",), "choice")]
    assert so.answer_coverage(answers, golds) == [[1.0, 1.0], [1.0, 0.0], [0.0, 1.0]]
    assert so.evaluate(answers, golds, [0, 1, 2]) == {"n": 2, "hit": 100.0, "vote": 100.0,
                                                      "member_acc": pytest.approx(400 / 6)}
    assert so.support_scores(answers, ["math", "choice"]) == [[0.5, 0.5], [0.5, 0.0], [0.0, 0.5]]
    # as spans: nothing right on the math question, "1/2" and "0.5" apart
    as_spans = [Gold(("\\frac{1}{2}",), "span"), Gold(("B",), "span")]
    assert so.evaluate(answers, as_spans, [0, 1, 2])["member_acc"] == pytest.approx(200 / 6)
    assert so.support_scores(answers, ["span", "span"])[0] == [0.0, 0.5]


@given(st.lists(st.lists(st.sampled_from(["Paris", "paris", "Lyon", "", "the Nice"]), min_size=2, max_size=2),
                min_size=1, max_size=4),
       st.lists(st.sampled_from(["Paris", "Nice", "Lyon"]), min_size=2, max_size=2))
def test_span_evaluation_is_official_em(answers, gold):
    from lmad.answers import majority_vote
    from lmad.answers.official import exact_match

    golds = [Gold((g,), "span") for g in gold]
    members = list(range(len(answers)))
    said = [[answers[a][q] for a in members] for q in range(2)]
    want_vote = 100 * sum(bool(exact_match(majority_vote(s, "span")[0], g)) for s, g in zip(said, golds)) / 2
    assert so.evaluate(answers, golds, members)["vote"] == want_vote


def test_select_reads_the_pools_own_keys_and_correctness():
    """Agreement is by the pool's stored keys (canonical in each question's ``answer_type``, a pool
    column), correctness its ``correct`` column. Agents 0 and 1 said 1/2 (0.5 and \\frac{1}{2} read to
    one key), agent 2 said 3."""
    from lmad.schemas import to_frame
    from lmad.stages.societies import select_societies

    def row(agent, qid, split, answer, key, correct):
        return {"qid": qid, "dataset": "math500", "split": split, "agent": agent, "agent_name": f"a{agent}",
                "temperature": 0.1, "persona": "plain", "variant": "standard", "perturb_seed": None,
                "perturb_scale": 0.0, "seed": 0, "response": answer, "answer": answer, "answer_norm": key,
                "answer_method": "answer_line", "answer_type": "math", "correct": correct, "prompt_tokens": 1,
                "completion_tokens": 1, "finish_reason": "stop", "cached": False}

    said = [("0.5", "1/2", True), ("\\frac{1}{2}", "1/2", True), ("3", "3", False)]
    pool = to_frame("society_pool", [row(a, q, s, *said[a]) for a in range(3)
                                     for q, s in (("q1", "construction"), ("q2", "evaluation"))])
    split = [{"benchmark": "math500", "dataset": "math500", "qid": q, "rank": i,
              "split": "construction" if i == 0 else "evaluation"} for i, q in enumerate(("q1", "q2"))]
    members, evaluation = select_societies(pool, split, 3, 0.5, [0.1], size=1)
    ev = {(r["selector"], r["split"]): r for r in evaluation}
    assert ev[("top_k", "evaluation")]["vote"] == 100.0 and ev[("top_k", "evaluation")]["member_acc"] == pytest.approx(
        200 / 3)
    assert ev[("sc_greedy", "construction")]["sc_coverage"] == 1
