import pytest
from hypothesis import given, settings, strategies as st

from lmad.answers import get
from lmad.answers.official import exact_match, f1_score
from lmad.answers.span import canonical_yes_no, extract_answer, is_yes_no_question, normalize_answer
from lmad.answers.text import MAX_ANSWER_WORDS, normalize_hotpot

SPAN = get("span")
majority_vote, all_agree = SPAN.vote, SPAN.agree


# ---------------------------------------------------------------- extraction

@pytest.mark.parametrize(
    "text, expected",
    [
        ("Answer: Paris", ("Paris", "answer_line")),
        ("answer: paris.", ("paris", "answer_line")),
        ("ANSWER:Paris", ("Paris", "answer_line")),
        # multiple answer lines -> last one wins
        ("Reasoning...\nAnswer: Paris\nWait, let me reconsider.\nAnswer: Lyon.", ("Lyon", "answer_line")),
        # markdown bold in several placements
        ("**Answer:** The Eiffel Tower", ("The Eiffel Tower", "answer_line")),
        ("**Answer**: Gwen Stefani", ("Gwen Stefani", "answer_line")),
        ("Answer: **Gwen Stefani**", ("Gwen Stefani", "answer_line")),
        ("## Final Answer: 1952", ("1952", "answer_line")),
        ("Final answer: Yes", ("Yes", "answer_line")),
        # marker alone on its line -> next non-empty line
        ("**Final Answer:**\n\n**J. K. Rowling**", ("J. K. Rowling", "answer_line")),
        # "the answer is" phrasing, abbreviation kept intact
        ("The capital is Paris. So the answer is St. Louis.", ("St. Louis", "answer_line")),
        ("The answer to the question is: Mount Everest.", ("Mount Everest", "answer_line")),
        ("Thus the final answer is \"Animal Farm\".", ("Animal Farm", "answer_line")),
        # quotes, boxed, trailing period
        ('Answer: "Yes Minister".', ("Yes Minister", "answer_line")),
        ("Final answer: \\boxed{42}", ("42", "answer_line")),
        # first sentence of the answer segment only
        ("Answer: Yes. Both are American directors.", ("Yes", "answer_line")),
        ("Answer: 1.5 million", ("1.5 million", "answer_line")),
        # full-width colon
        ("Answer：Tokyo", ("Tokyo", "answer_line")),
    ],
)
def test_extract_answer_line(text, expected):
    assert extract_answer(text) == expected


def test_later_marker_of_other_kind_wins():
    text = "Answer: Paris\nOn reflection, the answer is Lyon."
    assert extract_answer(text) == ("Lyon", "answer_line")
    text = "I first thought the answer is Lyon.\nFinal answer: Paris"
    assert extract_answer(text) == ("Paris", "answer_line")


def test_empty_marker_falls_back_to_previous_marker():
    assert extract_answer("Answer: Paris\nAnswer:") == ("Paris", "answer_line")


def test_possessive_is_not_a_marker():
    # quoting another agent must not count as this agent's answer line
    assert extract_answer("Agent 2's answer: London. I think it is Paris.") == (
        "I think it is Paris",
        "final_sentence",
    )
    assert extract_answer("Agent 2's answer: London\nMy answer: Paris") == ("Paris", "answer_line")


def test_to_answer_this_is_not_a_marker():
    ans, method = extract_answer("To answer this, consider both films.\nThey were released in 1999.")
    assert method == "final_sentence"
    assert ans == "They were released in 1999"


@pytest.mark.parametrize(
    "text, expected",
    [
        ("Both were born in 1950.\nThey are both American.", "They are both American"),
        ("Let me think. The director was born first. Gwen Stefani", "Gwen Stefani"),
        ("Paris\n\n   ", "Paris"),
        ("**Paris**", "Paris"),
        ("He was born in Washington, D.C. in 1950.", "He was born in Washington, D.C. in 1950"),
    ],
)
def test_final_sentence_fallback(text, expected):
    assert extract_answer(text) == (expected, "final_sentence")


@pytest.mark.parametrize("text", ["", "   ", "\n\n", "** **\n__\n", "...", None])
def test_empty(text):
    assert extract_answer(text) == ("", "empty")


def test_long_answer_cut_to_first_clause():
    text = (
        "Answer: the band, which formed in Anaheim in 1986 and was led by Gwen Stefani "
        "and her brother Eric, whose hits include Don't Speak"
    )
    assert extract_answer(text) == ("the band", "answer_line")


def test_long_answer_hard_cut():
    text = "Answer: " + " ".join(f"w{i}" for i in range(40))
    ans, method = extract_answer(text)
    assert method == "answer_line"
    assert ans.split() == [f"w{i}" for i in range(MAX_ANSWER_WORDS)]


def test_short_answer_with_comma_kept():
    assert extract_answer("Answer: Paris, France") == ("Paris, France", "answer_line")


# ------------------------------------------------------------- normalization

@pytest.mark.parametrize(
    "raw, norm",
    [
        ("The Eiffel Tower!", "eiffel tower"),
        ("  An   apple a day ", "apple day"),
        ("Theater", "theater"),  # 'the' only as a whole word
        ("Smith's", "smiths"),  # punctuation removed, not replaced
        ("U.S.A.", "usa"),
        ("rock-and-roll", "rockandroll"),
        ("A.B. the C", "ab c"),
        ("", ""),
    ],
)
def test_normalize_matches_official(raw, norm):
    assert normalize_hotpot(raw) == norm
    assert normalize_answer(raw) == norm


@pytest.mark.parametrize(
    "raw, expected",
    [
        ("Yes", "yes"),
        ("yes.", "yes"),
        ("Yes, they are", "yes"),
        ("no.", "no"),
        ("No, he was not.", "no"),
        ("**No**", "no"),
        ("TRUE", "yes"),
        ("False - it was 1990", "no"),
        ("true", "yes"),
        ("No Doubt", None),  # band name, not a no
        ("Yes Minister", None),
        ("True Detective", None),
        ("Nothing", None),
        ("Yesterday", None),
        ("Paris", None),
        ("No. 5", None),  # "number 5", never a no
        ("No. 10 Downing Street", None),
        ("no.7", None),
    ],
)
def test_canonical_yes_no(raw, expected):
    assert canonical_yes_no(raw) == expected
    # grouping for votes is the official normalization alone: "Yes, Minister" stays an entity
    assert normalize_answer(raw) == normalize_hotpot(raw)


@pytest.mark.parametrize("text, yes_no, expected", [
    ("Answer: Yes, they are.", True, ("yes", "answer_line+yes_no")),
    ("Answer: Yes, they are.", False, ("Yes, they are", "answer_line")),
    ("Answer: No. 5", True, ("No. 5", "answer_line")),
    ("Answer: TRUE", True, ("yes", "answer_line+yes_no")),
    ("Answer: yes", True, ("yes", "answer_line")),
    ("Answer: Yes Minister", True, ("Yes Minister", "answer_line")),
])
def test_extraction_reads_yes_no_only_for_yes_no_questions(text, yes_no, expected):
    assert extract_answer(text, yes_no=yes_no) == expected


@pytest.mark.parametrize("question, dataset, expected", [
    ("Were Scott Derrickson and Ed Wood of the same nationality?", "hotpotqa", True),
    ("Are Mount Kilimanjaro and Mount Kenya located in the same country?", "2wikimultihopqa", True),
    ("Which was founded first, Harvard University or Yale University?", "hotpotqa", False),
    ("Who wrote the novel that the film The Shining is based on?", "musique", False),
    ("Hydrogen's atomic number squared exceeds number of Spice Girls?", "strategyqa", True),
    ("Isaac Newton was born where?", "hotpotqa", False),  # "Isaac" is not "is"
])
def test_yes_no_question_from_text(question, dataset, expected):
    assert is_yes_no_question(question, dataset) is expected


# ----------------------------------------------------------------- EM and F1

def test_exact_match():
    assert exact_match("the Eiffel Tower.", ["Eiffel Tower"]) == 1.0
    assert exact_match("Eiffel", ["Eiffel Tower"]) == 0.0
    assert exact_match("Yes, both are.", ["yes"]) == 0.0  # the scorer never rewrites a prediction
    assert exact_match("NYC", ["New York City", "NYC"]) == 1.0
    assert exact_match("NYC", "NYC") == 1.0
    assert exact_match("x", []) == 0.0


def test_f1_hand_computed():
    # pred tokens: [barack, obama]; gold: [barack, hussein, obama]
    # P = 2/2, R = 2/3, F1 = 2*1*(2/3)/(1+2/3) = 0.8
    assert f1_score("Barack Obama", ["Barack Hussein Obama"]) == pytest.approx(0.8)
    # pred [new, york, city, usa] vs gold [new, york]: P=2/4, R=1 -> 2/3
    assert f1_score("New York City, USA", ["New York"]) == pytest.approx(2 / 3)
    assert f1_score("Paris", ["London"]) == 0.0
    assert f1_score("The Paris", ["paris!"]) == 1.0


def test_f1_repeated_tokens_use_multiset_overlap():
    # pred [a? no: articles dropped] -> pred [new, new, york], gold [new, york]
    # common = {new:1, york:1} = 2; P=2/3, R=1 -> 0.8
    assert f1_score("new new york", ["new york"]) == pytest.approx(0.8)


def test_f1_max_over_aliases():
    golds = ["Barack Hussein Obama", "Obama", "President Obama"]
    assert f1_score("Obama", golds) == 1.0
    # best alias: "President Obama" vs "Barack Obama": P=1/2,R=1/2 -> .5; first gold -> .8
    assert f1_score("Barack Obama", golds) == pytest.approx(0.8)


def test_f1_yes_no_special_case():
    # official rule: yes/no/noanswer mismatch is 0 even with token overlap
    assert f1_score("no", ["no answer"]) == 0.0
    assert f1_score("yes", ["no"]) == 0.0
    assert f1_score("noanswer", ["noanswer available"]) == 0.0
    assert f1_score("Yes, they are.", ["yes"]) == 0.0  # extraction, not the scorer, reads yes/no
    assert f1_score("True", ["yes"]) == 0.0
    # token overlap with a non-yes/no gold still scores normally
    assert f1_score("No Doubt band", ["No Doubt"]) == pytest.approx(0.8)


# --------------------------------------------------------------------- votes

def test_majority_vote_clear_winner_returns_first_original():
    ans, info = majority_vote(["Paris", "the Paris.", "London", "paris"])
    assert ans == "Paris"
    assert info["winner_norm"] == "paris"
    assert info["votes"] == {"paris": 3, "london": 1}
    assert info["tie"] is False
    assert info["strict_majority"] is True


def test_majority_vote_representative_is_first_agent_of_group():
    ans, _ = majority_vote(["London", "the Paris.", "Paris"])
    assert ans == "the Paris."


def test_majority_vote_tie_lowest_agent_index():
    ans, info = majority_vote(["London", "Paris", "paris", "london"])
    assert ans == "London"
    assert info["tie"] is True
    assert info["strict_majority"] is False
    ans, info = majority_vote(["Rome", "Paris", "London"])
    assert ans == "Rome" and info["tie"] is True


def test_majority_vote_tie_with_order_key():
    answers = ["London", "Paris", "paris", "london"]
    # agent 2 has the lowest key -> paris group comes first
    ans, info = majority_vote(answers, order_key=[0.7, 0.9, 0.1, 0.5])
    assert ans == "paris"
    assert info["winner_norm"] == "paris" and info["tie"] is True
    ans, _ = majority_vote(answers, order_key=lambda i: -i)
    assert ans == "london"
    with pytest.raises(ValueError):
        majority_vote(answers, order_key=[1, 2])


def test_majority_vote_groups_answers_as_extracted():
    # yes/no questions: extraction already turned every reading into "yes"/"no"
    answers = [extract_answer(t, yes_no=True)[0] for t in ("Answer: No, they are not.", "Answer: Yes", "Answer: no")]
    ans, info = majority_vote(answers)
    assert ans == "no" and info["winner_norm"] == "no" and not info["tie"]
    # other questions: "Yes, Minister" is an entity, not a yes
    ans, info = majority_vote(["Yes, Minister", "yes", "Yes Minister"])
    assert info["winner_norm"] == "yes minister" and ans == "Yes, Minister"


def test_majority_vote_empty_never_wins():
    ans, info = majority_vote(["", "", "Paris"])
    assert ans == "Paris"
    assert info["votes"] == {"": 2, "paris": 1}
    assert info["strict_majority"] is False
    assert info["tie"] is False
    # punctuation-only answers count as empty; an answer the normalization would erase ("The",
    # "A") is still an answer, kept lower-cased
    ans, info = majority_vote(["...", "The", "London"])
    assert ans == "The" and info["votes"] == {"": 1, "the": 1, "london": 1}


def test_majority_vote_all_empty():
    ans, info = majority_vote(["", "  ", "!"])
    assert ans == ""
    assert info["winner_norm"] == "" and info["tie"] is False
    ans, info = majority_vote([])
    assert ans == "" and info["votes"] == {}


def test_majority_vote_deterministic():
    answers = ["b", "a", "c", "a", "b"]
    results = {majority_vote(answers)[0] for _ in range(5)}
    assert results == {"b"}


def test_all_agree():
    assert all_agree(["Paris", "the paris", "PARIS."])
    assert not all_agree(["Yes, both.", "yes", "true"])  # read as yes/no only at extraction
    assert not all_agree(["Paris", "London"])
    assert not all_agree(["", ""])
    assert not all_agree(["Paris", ""])
    assert not all_agree([])


def _official_normalize(s):
    """hotpot_evaluate_v1.normalize_answer, as the official script writes it."""
    import re
    import string

    def remove_articles(text):
        return re.sub(r"\b(a|an|the)\b", " ", text)

    def white_space_fix(text):
        return " ".join(text.split())

    def remove_punc(text):
        exclude = set(string.punctuation)
        return "".join(ch for ch in text if ch not in exclude)

    return white_space_fix(remove_articles(remove_punc(s.lower())))


@settings(max_examples=300)
@given(st.lists(st.sampled_from(list("aAnNtThHeE .,!?'-_()\t\nÉé1") + ["the ", "An ", " a ", "THE."]),
                max_size=20).map("".join)
       | st.text(max_size=40))
def test_normalize_is_the_official_script_on_any_text(raw):
    assert normalize_hotpot(raw) == _official_normalize(raw)


def test_a_span_keeps_the_sign_of_a_negative_number():
    assert extract_answer("Answer: -3") == ("-3", "answer_line")
    assert extract_answer("Answer: - Paris") == ("Paris", "answer_line")  # a bullet's dash is no sign
    assert majority_vote(["-3", "3", "3"])[0] == "3" and not all_agree(["-3", "3"])
