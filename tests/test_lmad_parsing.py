"""LMAD parsers and their recorded fallbacks: node quality check, localization
validation, debate positions, repairs, and the controller's transitions."""

import json

import pytest

from lmad.answers import Reading
from lmad.protocols.localized_debate import controller
from lmad.protocols.localized_debate.commit_guard import GuardResult
from lmad.protocols.localized_debate.local_debate import parse_position
from lmad.protocols.localized_debate.localize import GENERIC_CONFLICT, parse_localization, segments
from lmad.protocols.localized_debate.nodes import build_chain, quality_flags, split_sentences
from lmad.protocols.localized_debate.resolve import parse_repair

RATIONALE = ("1. Pride and Prejudice is by Jane Austen.\n2. Jane Austen was born in Steventon, Hampshire.\n"
             "Answer: Hampshire")


# --------------------------------------------------------------------- node extraction

def test_quality_flags():
    items = ["Jane Austen wrote Pride and Prejudice.", "  ", "jane austen wrote  pride & prejudice",
             "Jane Austen wrote Pride and Prejudice!", " ".join(["word"] * 41), 7, {"claim": "x"}, "?!", "extra"]
    texts, flags = quality_flags(items, max_nodes=8, max_words=40)
    assert flags == [[], ["empty"], [], ["repeated"], ["over_long"], ["malformed"], ["malformed"], ["empty"],
                     ["excess"]]
    assert texts[5:7] == ["7", '{"claim": "x"}']  # non-strings keep their JSON text, for the record


def test_chain_keeps_valid_and_over_long_nodes_and_drops_the_rest():
    long_node = " ".join(["word"] * 41)
    out = json.dumps({"claims": ["A is B.", "", "a is b", long_node, 3, "So C."]})
    chain = build_chain(out, RATIONALE, "Hampshire", max_nodes=12, max_words=40)
    assert chain.nodes == ["A is B.", long_node, "So C."]
    assert chain.node_flags == [[], ["empty"], ["repeated"], ["over_long"], ["malformed"], []]
    assert (chain.fallback, chain.parse_error) == ("", "")


@pytest.mark.parametrize("output, error", [
    ("The claims are: A, B.", "not JSON"),
    ('{"claims": ["A is B.", "So', "not JSON"),          # cut off at max_tokens
    ('["A is B."]', 'not an object with a "claims" list'),
    ('{"claim": ["A is B."]}', 'not an object with a "claims" list'),
    ('{"claims": "A is B."}', 'not an object with a "claims" list'),
])
def test_unparseable_output_falls_back_to_sentences(output, error):
    chain = build_chain(output, RATIONALE, "Hampshire", max_nodes=12, max_words=40)
    assert chain.parse_error.startswith(error)
    assert chain.fallback == "sentence_split"
    assert chain.nodes == ["Pride and Prejudice is by Jane Austen.", "Jane Austen was born in Steventon, Hampshire.",
                           "Answer: Hampshire"]


def test_no_valid_node_falls_back_to_sentences_then_to_the_answer():
    nothing_valid = json.dumps({"claims": ["", 5, "  "]})
    chain = build_chain(nothing_valid, RATIONALE, "Hampshire", max_nodes=12, max_words=40)
    assert (chain.fallback, chain.parse_error) == ("sentence_split", "")
    assert chain.raw_nodes == ["", "5", ""] and chain.node_flags == [["empty"], ["malformed"], ["empty"]]
    chain = build_chain("not json", "  \n ", "Hampshire", max_nodes=12, max_words=40)
    assert (chain.fallback, chain.nodes) == ("answer_only", ["The answer is Hampshire."])
    chain = build_chain("", "", "", max_nodes=12, max_words=40)
    assert (chain.fallback, chain.nodes) == ("answer_only", ["The agent gave no answer."])


def test_split_sentences():
    assert split_sentences("- First one. Second 2 here? Third!\n* 3) Fourth\nStep 2: Fifth") == [
        "First one.", "Second 2 here?", "Third!", "Fourth", "Fifth"]
    assert split_sentences("3.5 million people live there. 1983 was the year.") == [
        "3.5 million people live there.", "1983 was the year."]


# ------------------------------------------------------------------------ localization

LENGTHS = [3, 2, 4]


def test_valid_localization():
    loc = parse_localization('{"conflict": " who  is the grandfather ", "witness": [3, 1, 2]}', LENGTHS)
    assert (loc.conflict, loc.witness, loc.witness_fallback) == ("who is the grandfather", [3, 1, 2], ["", "", ""])
    assert not loc.conflict_fallback and loc.parse_error == ""
    assert segments([["a", "b", "c"], ["d", "e"], ["f", "g", "h", "i"]], loc.witness) == [["a", "b", "c"], ["d"],
                                                                                        ["f", "g"]]


@pytest.mark.parametrize("witness, expected, reasons", [
    ([0, 2, 5], [3, 2, 4], ["out_of_range", "", "out_of_range"]),
    ([4, 3, 4], [3, 2, 4], ["out_of_range", "out_of_range", ""]),
    ([-1, 1, 1], [3, 1, 1], ["out_of_range", "", ""]),
    ([1.0, "2", True], [3, 2, 4], ["not_integer", "not_integer", "not_integer"]),
    ([None, [1], 2], [3, 2, 2], ["not_integer", "not_integer", ""]),
])
def test_invalid_witness_entries_fall_back_per_agent(witness, expected, reasons):
    loc = parse_localization(json.dumps({"conflict": "c", "witness": witness}), LENGTHS)
    assert (loc.witness, loc.witness_fallback, loc.conflict) == (expected, reasons, "c")


@pytest.mark.parametrize("output, reason, conflict, error", [
    ('{"conflict": "c", "witness": [1, 2]}', "wrong_count", "c", "witness has 2 entries for 3 agents"),
    ('{"conflict": "c", "witness": [1, 1, 1, 1]}', "wrong_count", "c", "witness has 4 entries"),
    ('{"conflict": "c", "witness": 2}', "missing", "c", 'no "witness" list'),
    ('{"conflict": "c"}', "missing", "c", 'no "witness" list'),
    ('{"conflict": "c", "witness": [1, 2', "unparseable", GENERIC_CONFLICT, "not JSON"),
    ("Agent 1 goes wrong at claim 3.", "unparseable", GENERIC_CONFLICT, "not JSON"),
    ("[3, 1, 2]", "unparseable", GENERIC_CONFLICT, "not a JSON object"),
])
def test_invalid_localization_falls_back_for_every_agent(output, reason, conflict, error):
    loc = parse_localization(output, LENGTHS)
    assert loc.witness == LENGTHS  # every chain's last, answer-bearing node
    assert loc.witness_fallback == [reason] * 3
    assert loc.conflict == conflict and loc.parse_error.startswith(error)


def test_blank_conflict_alone_becomes_generic():
    loc = parse_localization('{"conflict": "  ", "witness": [1, 1, 1]}', LENGTHS)
    assert (loc.conflict, loc.conflict_fallback, loc.witness_fallback) == (GENERIC_CONFLICT, True, ["", "", ""])


# ---------------------------------------------------------------- positions and repairs

@pytest.mark.parametrize("text, expected", [
    ("I checked.\nPosition: Buck-Tick hails from Fujioka.", ("Buck-Tick hails from Fujioka.", "marker")),
    ("**position:** A.\nlater: Position: B.", ("B.", "marker")),
    ("Position:\n\n  The claim on the next line.", ("The claim on the next line.", "marker")),
    ("No marker here.\nJust my claim.", ("Just my claim.", "last_line")),
    ("Position:   ", ("Position:", "last_line")),
    ("   \n ", ("old claim", "kept_previous")),
])
def test_parse_position(text, expected):
    assert parse_position(text, "old claim") == expected


def test_parse_repair():
    rep = parse_repair('{"nodes": [" A  is B. ", "", 4], "quotes": ["q one two", null]}')
    assert (rep.nodes, rep.quotes, rep.shape_ok) == (["A is B."], ["q one two"], True)
    assert rep.parse_error == "nodes[2] is not a string; quotes[1] is not a string"
    assert parse_repair('{"nodes": ["A"]}').parse_error == 'no "quotes" list'
    assert not parse_repair('{"quotes": ["A"]}').shape_ok
    assert parse_repair("nodes: A").parse_error.startswith("not JSON")


# -------------------------------------------------------------------------- controller

STATE = controller.initial_state(["q1"])[0]
ADMIT, REJECT = GuardResult("strict", True, []), GuardResult("strict", False, [])
SPAN = Reading("span")


def test_transitions_and_stop_reasons():
    new, reason = controller.transition(STATE, ["Paris", "paris.", "The Paris"], None, [], 0, 3, SPAN)
    assert reason == "agreement" and (new["prediction"], new["stop_iteration"], new["active"]) == ("Paris", 0, False)
    new, reason = controller.transition(STATE, ["Lyon", "Paris", "Paris"], REJECT, ["x"], 1, 3, SPAN)
    assert reason == "guard_rejected" and new["prediction"] == "Paris" and new["committed"] == []
    new, reason = controller.transition(STATE, ["Lyon", "Paris", "Nice"], ADMIT, ["x"], 1, 3, SPAN)
    assert reason is None and new["active"] and new["committed"] == ["x"]
    new, reason = controller.transition(STATE | {"committed": ["x"]}, ["Lyon", "Paris", "Nice"], ADMIT, ["y"], 2, 3,
                                        SPAN)
    assert reason == "budget" and new["prediction"] == "Lyon" and new["committed"] == ["x", "y"]  # tie: agent 1
    with pytest.raises(ValueError, match="no repair reached the commit guard"):
        controller.transition(STATE, ["Lyon", "Paris", "Nice"], None, [], 0, 3, SPAN)
    # empty answers never agree
    assert controller.needs_repair(["", "", ""], SPAN) and not controller.needs_repair(["Yes.", "yes", "YES"], SPAN)


def test_a_stop_is_keyed_by_the_questions_reading():
    choice = Reading("choice", choices=("w", "x", "y", "z"))
    new, reason = controller.transition(STATE, ["B", "B", "C"], REJECT, ["x"], 1, 3, choice)
    assert (reason, new["prediction"], new["prediction_norm"]) == ("guard_rejected", "B", "B")
    new, _ = controller.transition(STATE, ["B", "B", "C"], REJECT, ["x"], 1, 3, SPAN)
    assert new["prediction_norm"] == "b"  # a span question's key: the official normalization
    # "(B)" and "B" agree as option letters; as spans they agree too, "A" not erased to ""
    assert not controller.needs_repair(["(B)", "B", "b"], choice)
    assert not controller.needs_repair(["A", "(A)", "a."], SPAN) and controller.needs_repair(["A", "", "A"], SPAN)


def test_resolver_schema_fits_its_budget():
    """A reply with every item at its longest fits the token budget at 3 characters per token,
    so the constraint can always close the JSON before the budget cuts it."""
    import json as _json

    from lmad.protocols.localized_debate.resolve import CHARS_PER_TOKEN, resolution_schema

    for budget in (128, 192, 256, 512):
        schema = resolution_schema(budget)
        props = schema["properties"]
        longest = {k: ["x" * v["items"]["maxLength"]] * v["maxItems"] for k, v in props.items()}
        assert len(_json.dumps(longest)) <= CHARS_PER_TOKEN * budget, budget
