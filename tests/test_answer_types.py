"""Answer types: extraction, canonical form, equivalence, scoring and voting per task family."""

import threading
from decimal import Decimal
from fractions import Fraction

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from answer_reference import reference_vote
from lmad import answers as at
from lmad.answers import latex_math, official, span
from lmad.answers.choice import LETTERS

FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SLOW = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])  # math-verify runs

MARKERS = ["Answer:", "**Answer:**", "The answer is", "Final answer:", "\\boxed{", "}", "####", "$", "$$", "\\frac{",
           "<think>", "</think>", "\n", "(", ")", "B", "b", " or ", "=", ".", "\\dfrac", "\\left(", "\\text{", "-", ","]
noisy = st.lists(st.one_of(st.text(max_size=12), st.sampled_from(MARKERS)), max_size=10).map("".join)
texts = st.one_of(st.text(), noisy)
NON_STR = [None, 5, 2.5, b"Answer: 3", ["Answer: B"], {"a": 1}]
GRADED = ("numeric", "math", "choice")


# --------------------------------------------------------------------------
# never raises
# --------------------------------------------------------------------------

@pytest.mark.parametrize("answer_type", [t for t in at.ANSWER_TYPES if t != "math"])
@FAST
@given(text=texts, other=texts)
def test_never_raises(answer_type, text, other):
    answer, method = at.extract(text, answer_type, n_choices=4, choices=("red", "blue", "green", "a"))
    assert isinstance(answer, str) and isinstance(method, str) and method
    c = at.canonical(answer, answer_type)
    assert at.canonical(c, answer_type) == c
    assert at.canonical(at.canonical(text, answer_type), answer_type) == at.canonical(text, answer_type)
    assert at.equivalent(text, other, answer_type) == at.equivalent(other, text, answer_type)
    assert at.is_correct(answer, [other], answer_type) in (True, False, None)
    at.majority_vote([text, other, answer], answer_type)
    at.all_agree([text, other], answer_type)


@SLOW
@given(text=texts, other=texts)
def test_never_raises_math(text, other):
    answer, method = at.extract(text, "math")
    assert isinstance(answer, str) and method
    c = at.canonical(answer, "math")
    assert at.canonical(c, "math") == c
    assert at.canonical(at.canonical(text, "math"), "math") == at.canonical(text, "math")
    assert at.equivalent(answer, other, "math") == at.equivalent(other, answer, "math")
    assert at.is_correct(answer, [other, text], "math") in (True, False)


@pytest.mark.parametrize("answer_type", at.ANSWER_TYPES)
@pytest.mark.parametrize("bad", NON_STR)
def test_non_str_inputs(answer_type, bad):
    answer, method = at.extract(bad, answer_type)
    assert (answer, method) == ("", "empty")
    assert at.canonical(bad, answer_type) == ""
    assert not at.equivalent(bad, bad, answer_type)
    assert at.is_correct(bad, ["3"], answer_type) in (False, None)
    assert at.extract("Answer: B", "choice", n_choices=bad, choices=bad if bad is not None else ())[0] == "B"


def test_unknown_answer_type_is_a_programming_error():
    for f in (lambda: at.extract("x", "essay"), lambda: at.canonical("x", "essay"), lambda: at.answer_instruction("x")):
        with pytest.raises(ValueError):
            f()


# --------------------------------------------------------------------------
# a gold answer is correct against itself in every surface form
# --------------------------------------------------------------------------

def _with_commas(n: int) -> str:
    return f"{n:,}"


def _decimal(f: Fraction) -> str | None:
    """f as a finite decimal ("-0.125"), or None when it has none."""
    d = f.denominator
    for p in (2, 5):
        while d % p == 0:
            d //= p
    if d != 1:
        return None
    return format(Decimal(f.numerator) / Decimal(f.denominator), "f")


numbers = st.one_of(
    st.integers(-10**7, 10**7).map(lambda n: (Fraction(n), [str(n), _with_commas(n), f"{n}.0"])),
    st.tuples(st.integers(-999, 999), st.integers(1, 64)).map(lambda t: Fraction(*t)).map(
        lambda f: (f, [s for s in (f"{f.numerator}/{f.denominator}", f"\\frac{{{f.numerator}}}{{{f.denominator}}}",
                                   _decimal(f)) if s])),
)


@FAST
@given(gold=numbers, pick=st.integers(0, 10), prose=st.sampled_from(["", "Let me think. 3 apples and 4 pears.\n"]))
def test_numeric_gold_in_every_form(gold, pick, prose):
    value, spellings = gold
    g = spellings[pick % len(spellings)]
    forms = [f"\\boxed{{{g}}}", f"Answer: {g}", f"**Answer:** {g}.", f"The answer is {g}.", f"#### {g}",
             f"... so {g}", f"The final answer is $\\boxed{{{g}}}$."]
    for form in forms:
        answer, method = at.extract(prose + form, "numeric")
        assert at.is_correct(answer, [g], "numeric"), (form, answer, method)
        assert at.is_correct(answer, [str(value)], "numeric")
        assert answer == at.canonical(str(value.numerator if value.denominator == 1 else value), "numeric")


MATH_GOLDS = ["\\frac{\\sqrt{3}}{2}", "2\\sqrt{5}", "(1,2)", "x^2+1", "\\pi", "\\frac{1}{2}", "-7", "3\\pi r^2",
              "[0,\\infty)", "\\{1,2,3\\}", "10^{10}", "\\begin{pmatrix}1\\\\2\\end{pmatrix}", "e^{i\\pi}", "y=2x+3"]


@SLOW
@given(g=st.sampled_from(MATH_GOLDS), k=st.integers(0, 5))
def test_math_gold_in_every_form(g, k):
    form = [f"\\boxed{{{g}}}", f"Answer: ${g}$", f"The answer is ${g}$.", f"so we get $${g}$$", f"Final Answer: {g}",
            f"Thus \\( {g} \\)"][k]
    answer, method = at.extract("Work: $a+b$ first.\n" + form, "math")
    assert at.is_correct(answer, [g], "math"), (form, answer, method)


@FAST
@given(n=st.integers(1, 26), i=st.integers(0, 25), k=st.integers(0, 9), prose=st.sampled_from(["", "A dog ran. I think.\n"]))
def test_choice_gold_in_every_form(n, i, k, prose):
    x = LETTERS[i % n]
    form = [f"Answer: {x}", f"Answer: ({x})", f"**Answer:** {x}.", f"\\boxed{{{x}}}", f"The correct option is ({x}).",
            f"{x})", f"answer: {x.lower()}", f"The answer is {x}", f"Answer: {x}) because", f"\\boxed{{\\text{{{x}}}}}"][k]
    for t in ("choice", "opinion"):
        answer, method = at.extract(prose + form, t, n_choices=n)
        assert answer == x, (form, answer, method)
    assert at.is_correct(answer, x, "choice") and at.is_correct(answer, f"({x.lower()})", "choice")


# --------------------------------------------------------------------------
# equivalence and voting
# --------------------------------------------------------------------------

@pytest.mark.parametrize("answer_type", [t for t in at.ANSWER_TYPES if t != "math"])
@FAST
@given(a=texts, b=texts)
def test_equivalence_symmetric_reflexive(answer_type, a, b):
    assert at.equivalent(a, b, answer_type) == at.equivalent(b, a, answer_type)
    assert at.equivalent(a, a, answer_type) == bool(at.canonical(a, answer_type))
    assert not at.equivalent(a, "", answer_type)


span_answers = st.lists(st.one_of(st.sampled_from(["Paris", "paris.", "The Paris", "", "the", "Yes", "yes", "No", "London",
                                                   "  ", "a b", "A  B!"]), st.text(max_size=6), st.none()),
                        max_size=7)


@pytest.mark.parametrize("answer_type", ["span", "yes_no"])
@FAST
@given(xs=span_answers, data=st.data())
def test_span_voting_is_the_reference_vote(answer_type, xs, data):
    key = data.draw(st.one_of(st.none(), st.lists(st.integers(0, 3), min_size=len(xs), max_size=len(xs))))
    order = None if key is None else sorted(range(len(xs)), key=lambda i: (key[i], i))
    assert at.majority_vote(xs, answer_type, order_key=key)[0] == reference_vote(xs, answer_type, order)
    keys = {span.normalize_answer(x or "") for x in xs}
    assert at.all_agree(xs, answer_type) == (bool(xs) and len(keys) == 1 and "" not in keys)
    if key is not None:
        f = key.__getitem__
        assert at.majority_vote(xs, answer_type, order_key=f) == at.majority_vote(xs, answer_type, order_key=key)


def test_voting_groups_by_equivalence():
    winner, info = at.majority_vote(["3", "1/2", "0.5", "\\frac{1}{2}"], "numeric")
    assert winner == "1/2" and info == {"votes": {"3": 1, "1/2": 3}, "tie": False, "winner_norm": "1/2",
                                        "strict_majority": True}
    winner, info = at.majority_vote(["C", "(B)", "B", ""], "choice")
    assert winner == "(B)" and info["votes"] == {"C": 1, "B": 2, "": 1} and not info["strict_majority"]
    winner, info = at.majority_vote(["A", "B"], "choice", order_key=[1, 0])
    assert winner == "B" and info["tie"]
    assert at.majority_vote(["", ""], "numeric") == ("", {"votes": {"": 2}, "tie": False, "winner_norm": "",
                                                         "strict_majority": False})
    winner, info = at.majority_vote(["\\frac{\\sqrt{2}}{2}", "x", "\\frac{1}{\\sqrt{2}}"], "math")
    assert winner == "\\frac{\\sqrt{2}}{2}" and info["votes"] == {"\\frac{\\sqrt{2}}{2}": 2, "x": 1}
    assert at.all_agree(["1/2", "0.5", "\\dfrac12"], "numeric") and not at.all_agree(["1/2", ""], "numeric")
    assert not at.all_agree([], "choice") and at.all_agree(["b", "(B)", "B."], "choice")


# --------------------------------------------------------------------------
# scorer edge cases (the benchmarks' rules)
# --------------------------------------------------------------------------

@pytest.mark.parametrize("text,want,method", [
    ("\\boxed{\\frac{1}{2}}", "1/2", "boxed"),
    ("First $\\boxed{3}$, then finally \\boxed{\\dfrac{1}{2}}.", "1/2", "boxed"),
    ("\\boxed{\\text{five}}", "five", "boxed_text"),
    ("Answer: 0.5", "1/2", "answer_line"),
    ("Answer: .5", "1/2", "answer_line"),
    ("Answer: \\dfrac12", "1/2", "answer_line"),
    ("Answer: -\\frac{3}{6}", "-1/2", "answer_line"),
    ("Answer: 5 dollars", "5", "answer_line"),
    ("Answer: $18.00 per day", "18", "answer_line"),
    ("Answer: 12\\text{ cm}", "12", "answer_line"),
    ("The answer is 1,000,000.", "1000000", "answer_line"),
    ("Answer: 27.0", "27", "answer_line"),
    ("Answer: 007", "7", "answer_line"),
    ("Answer: 50\\%", "50", "answer_line"),
    ("Answer: x = -3", "-3", "answer_line"),
    ("Answer: five", "five", "answer_line_text"),
    ("Natalia sold 48/2 = 24 clips.\n#### 72", "72", "hash_line"),
    ("So she pays 3 - 1 = 2 dollars", "2", "bare_number"),
    ("There are 10 apples and 2,500 pears.", "2500", "bare_number"),
    ("no number here", "", "unparsed"),
    ("", "", "empty"),
    ("   \n ", "", "empty"),
    ("<think>the answer is 5</think>", "", "empty+think_removed"),
    ("<think>hm</think>\nAnswer: 9", "9", "answer_line+think_removed"),
    ("<think>unfinished 3 4 5", "", "empty+think_removed"),
    ("Agent 2's answer: 4. Answer: 6", "6", "answer_line"),
])
def test_numeric_edges(text, want, method):
    assert at.extract(text, "numeric") == (want, method)


@pytest.mark.parametrize("a,b,same", [
    ("\\frac{1}{2}", "0.5", True), ("\\dfrac{1}{2}", "1/2", True), ("27.0", "27", True), ("1,000", "1000", True),
    ("$5", "5 dollars", True), ("-0", "0", True), ("0.333", "1/3", False), ("5", "50", False), ("", "", False),
    ("12\\text{ cm}", "12", True), ("3.", "3", True), ("1/0", "1/0", True), ("1/0", "0", False),
])
def test_numeric_equivalence(a, b, same):
    assert at.equivalent(a, b, "numeric") is same
    assert at.equivalent(b, a, "numeric") is same


@pytest.mark.parametrize("text,want,method", [
    ("So $\\boxed{\\dfrac{\\sqrt{3}}{2}}$.", "\\frac{\\sqrt{3}}{2}", "boxed"),
    ("\\boxed{\\left( 1, \\frac12 \\right)}", "(1,\\frac{1}{2})", "boxed"),
    ("Answer: $x = 3$.", "3", "answer_line"),
    ("The answer is $30^\\circ$ since ...", "30", "answer_line"),
    ("Answer: 5\\text{ cm}", "5", "answer_line"),
    ("Answer: $\\frac12$ because $1/2 = 0.5$", "1/2", "answer_line"),
    ("Answer:\n$$\n\\pi r^2\n$$", "\\pi r^2", "answer_line"),
    ("First $a$, then the area is $4\\pi$.", "4\\pi", "last_math"),
    ("Hence\n2\\sqrt{2}", "2\\sqrt{2}", "last_line"),
    ("Answer: $y = 2x + 1$", "2x+1", "answer_line"),
    ("Answer: $x < 3$", "x<3", "answer_line"),
    ("", "", "empty"),
    ("<think>\\boxed{4}</think>", "", "empty+think_removed"),
])
def test_math_edges(text, want, method):
    assert at.extract(text, "math") == (want, method)


@SLOW
@given(x=st.sampled_from(["\\frac{1}{2}", "0.5", "\\dfrac{1}{2}", "\\tfrac12", "1/2", "\\frac{2}{4}", ".5",
                          "\\left(\\frac{1}{2}\\right)"]),
       y=st.sampled_from(["\\frac{1}{2}", "0.5", "\\dfrac12", "2^{-1}", "\\frac{\\sqrt{4}}{4}"]))
def test_math_halves(x, y):
    assert at.equivalent(x, y, "math") and at.equivalent(y, x, "math")


@pytest.mark.parametrize("a,b,same", [
    ("\\frac{\\sqrt{2}}{2}", "\\frac{1}{\\sqrt{2}}", True), ("x^2+2x+1", "(x+1)^2", True), ("(1,2)", "(1, 2)", True),
    ("\\pi", "3.14", False), ("2", "3", False), ("10^\\circ", "10", True), ("\\{1,2\\}", "\\{2,1\\}", True),
    ("5\\text{ cm}", "5", True), ("x=3", "3", True), ("", "", False), ("}{", "}{", True), ("}{", "a", False),
])
def test_math_equivalence(a, b, same):
    assert at.equivalent(a, b, "math") is same
    assert at.equivalent(b, a, "math") is same


def test_math_verify_outside_the_main_thread():
    latex_math._verified.cache_clear()
    out = {}

    def work():
        out["sqrt"] = at.equivalent("\\frac{\\sqrt{2}}{2}", "\\frac{1}{\\sqrt{2}}", "math")
        out["tower"] = at.equivalent("2^{2^{100}}", "3", "math")  # refused up front: no signal timeout here

    t = threading.Thread(target=work)
    t.start()
    t.join(30)
    assert out == {"sqrt": True, "tower": False}


def test_math_verify_timeout_in_the_main_thread(monkeypatch):
    monkeypatch.setattr(latex_math, "_MV_TIMEOUT_S", 1)
    latex_math._verified.cache_clear()
    assert at.equivalent("2^{2^{100}}", "3", "math") is False
    latex_math._verified.cache_clear()


@pytest.mark.parametrize("text,n,want,method", [
    ("Answer: B", 4, "B", "answer_line"),
    ("Answer: (B)", 4, "B", "answer_line"),
    ("**Answer:** B.", 4, "B", "answer_line"),
    ("Answer: B) 42 m/s", 4, "B", "answer_line"),
    ("answer: b", 4, "B", "answer_line"),
    ("Final answer: (d)", 4, "D", "answer_line"),
    ("The correct option is (C).", 4, "C", "answer_line"),
    ("So the best choice is clearly (B).", 4, "B", "answer_line"),
    ("\\boxed{B}", 4, "B", "boxed"),
    ("$\\boxed{\\text{(C)}}$", 4, "C", "boxed"),
    ("Answer: A or C", 4, "", "ambiguous"),
    ("Answer: (A), (C)", 4, "", "ambiguous"),
    ("Answer: B\nOn reflection, answer: A or D", 4, "", "ambiguous"),
    ("\\boxed{A, B}", 4, "", "ambiguous"),
    ("Answer: E", 4, "", "unparsed"),
    ("Answer: E", 5, "E", "answer_line"),
    ("Answer: F", 5, "", "unparsed"),
    ("B", 4, "B", "letter_line"),
    ("(B)", 4, "B", "letter_line"),
    ("B)", 4, "B", "letter_line"),
    ("B.", 4, "B", "letter_line"),
    ("My reasoning follows.\n\n**C**\n\nBecause it is so.", 4, "C", "letter_line"),
    ("a", 4, "", "unparsed"),
    ("It is a good question, a hard one.\na", 4, "", "unparsed"),
    ("Answer: a dog", 4, "", "unparsed"),
    ("Answer: A rise in temperature", 4, "", "unparsed"),
    ("Answer: A because the rest are wrong", 4, "A", "answer_line"),
    ("The answer is B. Agent 1's answer: C", 4, "B", "answer_line"),
    ("", 4, "", "empty"),
    ("<think>Answer: B</think>", 4, "", "empty+think_removed"),
    ("<think>maybe A</think>Answer: D", 4, "D", "answer_line+think_removed"),
    ("Answer: B", 0, "B", "answer_line"),
    ("Answer: B", 1, "", "unparsed"),
])
def test_choice_edges(text, n, want, method):
    assert at.extract(text, "choice", n_choices=n) == (want, method)
    assert at.extract(text, "opinion", n_choices=n) == (want, method)


def test_choice_option_text():
    opts = ("T cells", "Paris, France", "B cells", "A rise in temperature")
    assert at.extract("Answer: paris, france.", "choice", 4, opts) == ("B", "option_text")
    assert at.extract("Answer: B cells", "choice", 4, opts) == ("C", "option_text")
    assert at.extract("Answer: A rise in temperature", "choice", 4, opts) == ("D", "option_text")
    assert at.extract("Answer: B", "choice", 4, ("B", "A", "C", "D")) == ("B", "answer_line")  # a letter stays a letter
    assert at.extract("Answer: Rome", "choice", 4, opts) == ("", "unparsed")


def test_choice_canonical_and_scoring():
    assert [at.canonical(x, "choice") for x in ("b", "(B)", "B)", "B.", "**B**", " B ")] == ["B"] * 6
    assert at.is_correct("B", ["B"], "choice") and not at.is_correct("B", ["C"], "choice")
    assert not at.is_correct("", ["B"], "choice") and not at.is_correct("B", [], "choice")
    assert at.is_correct("B", ["B"], "opinion") is None


def test_span_scoring_is_official_em():
    assert at.is_correct("the Eiffel Tower.", ["Eiffel Tower"], "span") is True
    assert at.is_correct("Eiffel", ["Eiffel Tower"], "span") is False
    assert at.is_correct("yes", "yes", "yes_no", rules="yes_no") is True
    assert at.extract("Yes, they are.", "yes_no") == span.extract_answer("Yes, they are.", yes_no=True)
    assert at.extract("Answer: Paris", "span") == ("Paris", "answer_line")


# --------------------------------------------------------------------------
# opinion distributions
# --------------------------------------------------------------------------

def test_jensen_shannon():
    assert at.jensen_shannon([1, 0], [0, 1]) == pytest.approx(1.0)
    assert at.jensen_shannon([0.5, 0.5], [1, 1]) == pytest.approx(0.0)
    scipy = pytest.importorskip("scipy.spatial.distance")
    p, q = [0.1, 0.6, 0.3], [0.3, 0.3, 0.4]
    assert at.jensen_shannon(p, q) == pytest.approx(scipy.jensenshannon(p, q, base=2))
    for bad in (([1], [0.5, 0.5]), ([-1, 2], [1, 1]), ([0, 0], [1, 1]), ([float("nan"), 1], [1, 1])):
        with pytest.raises(ValueError):
            at.jensen_shannon(*bad)


@FAST
@given(p=st.lists(st.floats(0, 1), min_size=1, max_size=6), q=st.lists(st.floats(0, 1), min_size=6, max_size=6))
def test_jensen_shannon_bounds(p, q):
    q = q[: len(p)]
    if sum(p) > 0 and sum(q) > 0:
        d = at.jensen_shannon(p, q)
        assert 0.0 <= d <= 1.0 and d == pytest.approx(at.jensen_shannon(q, p))


def test_answer_distribution_and_similarity():
    assert at.answer_distribution(["A", "b", "(A)", "", "E", None, "zzz"], 4) == [2 / 3, 1 / 3, 0.0, 0.0]
    assert at.answer_distribution(["", "E"], 4) is None and at.answer_distribution(["A"], 0) is None
    sim = at.opinion_similarity(["A", "A", "B"], {"US": [2 / 3, 1 / 3], "FR": [0, 0, 1], "bad": [0, 0]})
    assert sim["US"] == pytest.approx(1.0) and 0 <= sim["FR"] < 0.5 and "bad" not in sim
    assert at.opinion_similarity(["", "Z"], {"US": [0.5, 0.5]}) == {}


# --------------------------------------------------------------------------
# prompts
# --------------------------------------------------------------------------

@pytest.mark.parametrize("reply,expected", [
    ("D) The brain", ("D", "letter_lead")), ("(B) The liver", ("B", "letter_lead")),
    ("A) The heart\n\nReason: it pumps blood.", ("A", "letter_lead")),
    ("A: The lungs.", ("", "ambiguous")),          # letter A, text of option C: two options named
    ("A rise in pressure", ("", "unparsed")), ("The brain is an organ.", ("", "unparsed")),
])
def test_an_option_written_out_as_listed(reply, expected):
    """SmolLM2's commonest reply to a choice question (34 of 40 demo replies before this form)."""
    assert at.extract(reply, "choice", 4, ["The heart", "The liver", "The lungs", "The brain"]) == expected


def test_answer_instructions():
    # the multi-hop lines, word for word as the prompts always had them (their calls stay cached)
    assert at.answer_instruction("span") == 'Then finish with a last line of the form "Answer: <short answer>".'
    assert at.answer_instruction("yes_no") == 'Then finish with a last line of the form "Answer: yes" or "Answer: no".'
    assert at.answer_instruction("numeric") == 'Then finish with a last line of the form "Answer: <number>".'
    assert at.answer_instruction("choice") == (
        'Then finish with a last line of the form "Answer: <letter>", the letter of one option (A, B, C or D).')
    assert at.answer_instruction("opinion", 2).endswith("(A or B).")
    assert "LaTeX" in at.answer_instruction("math")
    # what each instruction asks for is what the extractor reads
    assert at.extract("Answer: 12", "numeric") == ("12", "answer_line")
    assert at.extract("Answer: C", "choice") == ("C", "answer_line")
    assert at.extract("Answer: \\frac{3}{4}", "math") == ("3/4", "answer_line")


# --------------------------------------------------------------------------
# a question's gold, as the analyses use it
# --------------------------------------------------------------------------

def _question(answer, answer_type=None, aliases=(), benchmark="x"):
    return {"qid": "q1", "dataset": "d", "benchmark": benchmark, "answer": answer, "aliases": list(aliases),
            "answer_type": answer_type}


def test_gold_of_a_question_row():
    g = at.gold_of(_question("\\frac{1}{2}", "math", ["0.5"], "math500"))
    assert (tuple(g), g.answer_type, g.rules) == (("\\frac{1}{2}", "0.5"), "math", "hotpotqa")
    assert at.gold_of(_question("no", "yes_no", benchmark="strategyqa")).rules == "yes_no"
    assert at.gold_of(_question("Paris", "span", benchmark="musique.shard2")).rules == "musique"
    assert at.gold_of(_question("Paris", "span")) == at.Gold(("Paris",), "span")  # unknown benchmark: default rules
    with pytest.raises(ValueError, match="no answer_type"):
        at.gold_of(_question("Paris"))  # a row without its type is an error, never a span
    assert at.golds_of([_question("B", "choice")]) == {("d", "q1"): at.Gold(("B",), "choice")}
    with pytest.raises(TypeError, match="Gold"):
        at.gold_correct("Paris", ["Paris"])  # gold strings carry no type
    with pytest.raises(ValueError, match="unknown answer type"):
        at.Gold(("x",), "essay")


@pytest.mark.parametrize("answer_type, gold, right, wrong", [
    ("math", "\\frac{1}{2}", ["1/2", "0.5", "\\dfrac{1}{2}", "$\\frac12$"], ["12", "2", ""]),
    ("numeric", "-3", ["-3", "-3.0", "−3"], ["3", ""]),
    ("choice", "B", ["(B)", "B", "b", "**B**"], ["C", "(C)", ""]),
    ("choice", "A", ["(A)", "A"], ["a rise"]),
])
def test_gold_correct_by_the_answer_type(answer_type, gold, right, wrong):
    g = at.Gold((gold,), answer_type)
    assert all(at.gold_correct(a, g) for a in right)
    assert not any(at.gold_correct(a, g) for a in wrong)


def test_span_rules_would_get_typed_answers_wrong():
    # the reason the analyses take the gold's type
    assert not official.exact_match("1/2", ["\\frac{1}{2}"]) and not official.exact_match("0.5", ["\\frac{1}{2}"])
    assert official.exact_match("3", ["-3"]) and not at.gold_correct("3", at.Gold(("-3",), "numeric"))


def test_opinion_questions_have_no_right_answer():
    assert not at.gold_correct("A", at.Gold(("A",), "opinion"))


spans = st.one_of(st.sampled_from(["Paris", "paris.", "The Paris", "", "yes", "No", "1/2", "-3", "A", "a"]), st.text())


@FAST
@given(pred=st.one_of(spans, st.none()), golds=st.lists(spans, max_size=3),
       rules=st.sampled_from(["hotpotqa", "musique", "yes_no"]))
def test_span_gold_correct_is_official_em(pred, golds, rules):
    em = bool(official.exact_match(pred or "", golds, rules))
    assert em == at.gold_correct(pred, at.Gold(tuple(golds), "span", rules))
    assert at.gold_correct(pred, at.Gold(tuple(golds), "yes_no", rules)) == em


@FAST
@given(a=spans, b=spans, answer_type=st.sampled_from(["span", "yes_no"]))
def test_span_keys_and_sameness_are_the_normalization(a, b, answer_type):
    assert at.group_keys([a, b], answer_type) == [span.normalize_answer(a), span.normalize_answer(b)]
    assert at.same_answer(a, b, answer_type) == (span.normalize_answer(a) == span.normalize_answer(b))
    assert at.key_of(a, {"answer_type": answer_type}) == span.normalize_answer(a)


def test_group_keys_follow_the_typed_vote():
    assert at.group_keys(["0.5", "1/2", "", "\\frac{1}{2}", "3"], "math") == ["1/2", "1/2", "", "1/2", "3"]
    assert at.group_keys(["(B)", "B", "c"], "choice") == ["B", "B", "C"]
    assert at.same_answer("", "", "math") and at.same_answer("(B)", "B", "choice")
    assert not at.same_answer("", "B", "choice") and not at.same_answer("1/2", "2", "math")
    assert at.key_of("(b)", {"answer_type": "choice"}) == "B"
    with pytest.raises(ValueError, match="no answer_type"):
        at.type_of({})


def test_every_benchmark_names_a_registered_type():
    from lmad.data import ANSWER_TYPE

    assert set(ANSWER_TYPE.values()) <= set(at.TYPES) and set(at.ANSWER_TYPES) == set(at.TYPES)
    with pytest.raises(ValueError, match="unknown answer type"):
        at.get("essay")
    with pytest.raises(ValueError, match="no answer type"):
        at.get(None)
