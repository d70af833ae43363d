"""Every parser of model output takes any string without raising, and records why it fell
back (hypothesis fuzzing plus the replies that broke parsers: deep nesting, huge integers)."""
import json

import pytest
from hypothesis import given, strategies as st

from lmad.answers import Reading
from lmad.answers.span import extract_answer, normalize_answer
from lmad.answers.text import strip_think
from lmad.model_json import MAX_CHARS, load_model_json
from lmad.protocols.debate.decisions import parse_judge, parse_moderator
from lmad.protocols.localized_debate.local_debate import parse_position
from lmad.protocols.localized_debate.localize import parse_localization
from lmad.protocols.localized_debate.nodes import parse_claims, quality_flags
from lmad.protocols.localized_debate.relation_check import parse_verdict as parse_relation
from lmad.protocols.localized_debate.resolve import parse_repair
from lmad.stages.judge import parse_verdict as parse_judge_verdict

SPAN, SPAN_YES_NO = Reading("span"), Reading("span", yes_no=True)
CHOICE, MATH = Reading("choice", choices=("x", "y", "z", "w")), Reading("math")

# (name, parser, the parsed result's recorded error for a reply that is not the JSON asked for)
PARSERS = {
    "claims": (lambda t: parse_claims(t), lambda r: r[1]),
    "localization": (lambda t: parse_localization(t, [2, 3, 1]), lambda r: r.parse_error),
    "repair": (parse_repair, lambda r: r.parse_error),
    "judge": (lambda t: parse_judge(t, SPAN), lambda r: r.error),
    "judge yes/no": (lambda t: parse_judge(t, SPAN_YES_NO), lambda r: r.error),
    "judge choice": (lambda t: parse_judge(t, CHOICE), lambda r: r.error),
    "judge math": (lambda t: parse_judge(t, MATH), lambda r: r.error),
    "moderator": (lambda t: parse_moderator(t, SPAN), lambda r: r.error),
    "moderator choice": (lambda t: parse_moderator(t, CHOICE), lambda r: r.error),
    "position": (lambda t: parse_position(t, "previous"), None),
    "relation check": (parse_relation, lambda r: r[1]),
    "judge verdict": (parse_judge_verdict, None),
    "answer": (extract_answer, None),
    "answer yes/no": (lambda t: extract_answer(t, True), None),
    "think": (strip_think, None),
    "normalize": (normalize_answer, None),
}

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
        st.sampled_from(["claims", "witness", "conflict", "nodes", "quotes", "decided", "answer", "x"]) | st.text(max_size=8),
        inner, max_size=5),
    max_leaves=20)
replies = st.one_of(
    st.text(max_size=300),
    json_values.map(json.dumps),
    json_values.map(lambda v: json.dumps(v)[: max(1, len(json.dumps(v)) // 2)]),  # cut off, like a truncated reply
    st.builds(lambda n, c: c * n, st.integers(0, 3000), st.sampled_from(["[", "{", '{"a":', "[[", '"'])),
)

HOSTILE = {
    "deep list": "[" * 1000,
    "deep objects": '{"claims": ' * 2000,
    "closed deep nesting": "[" * 600 + "]" * 600,
    "5,000-digit integer": "1" * 5000,
    "witness 5,000 digits": '{"conflict": "c", "witness": [' + "9" * 5000 + ', 1, 1]}',
    "claims 5,000 digits": '{"claims": [' + "7" * 5000 + "]}",
    "NaN": '{"answer": NaN}',
    "Infinity witness": '{"conflict": "c", "witness": [Infinity, 1, 1]}',
    "lone surrogate": '{"claims": ["x\\ud800"]}',
    "oversized": '{"claims": ["' + "a" * (MAX_CHARS + 10) + '"]}',
    "null bytes": "\x00" * 50,
    "not a string": None,
}


def _no_raise(text):
    for name, (parse, error_of) in PARSERS.items():
        result = parse(text)
        if name == "claims" and not result[1]:
            quality_flags(result[0], 5, 30)  # the parsed items feed this next


@given(replies)
def test_no_parser_raises_on_any_string(text):
    _no_raise(text)


@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_replies_fall_back_with_a_recorded_reason(name):
    text = HOSTILE[name]
    if text is None:  # a backend that returned no text
        value, error = load_model_json(text)
        assert value is None and error
        return
    _no_raise(text)
    json_parsers = ["claims", "localization", "repair", "judge", "judge choice", "judge math", "moderator",
                    "moderator choice"]
    if name not in ("lone surrogate",):
        for p in json_parsers:
            parse, error_of = PARSERS[p]
            assert error_of(parse(text)), (p, name)  # the fallback says why


@pytest.mark.parametrize("text,reason", [
    ("[" * 1000, "nesting 1000 deep"),
    ("1" * 5000, "an integer of 5000 digits"),
    ('{"answer": NaN}', "non-standard constant NaN"),
    ("x" * (MAX_CHARS + 1), "characters (limit"),
    ('{"a": "' + "[" * 52 + '"}', ""),  # brackets inside a string do not nest
])
def test_the_loader_names_each_limit(text, reason):
    value, error = load_model_json(text)
    assert (reason in error) if reason else (error == "" and value == {"a": "[" * 52})


def test_valid_replies_still_parse():
    assert parse_claims('{"claims": ["a", "b"]}') == (["a", "b"], "")
    assert parse_localization('{"conflict": "c", "witness": [1, 2, 1]}', [2, 3, 1]).witness == [1, 2, 1]
    assert parse_repair('{"nodes": ["n"], "quotes": ["q"]}').nodes == ["n"]
    assert parse_judge('{"decided": true, "answer": "Paris"}', SPAN).answer == "Paris"
    assert parse_judge('{"decided": true, "answer": "Yes, they are."}', SPAN_YES_NO).answer == "yes"
    assert parse_moderator('{"answer": "(B)"}', CHOICE).answer == "B"


@pytest.mark.parametrize("blank", ["", " ", " . ", "**", '""'])
def test_a_blank_verdict_answer_is_no_answer_of_any_type(blank):
    """The field is read as an answer line; a blank one is empty, never the marker's own word."""
    for reading in (SPAN, SPAN_YES_NO, CHOICE, MATH, Reading("numeric")):
        assert parse_moderator(json.dumps({"answer": blank}), reading).error == "empty answer", reading
        judged = parse_judge(json.dumps({"decided": True, "answer": blank}), reading)
        assert (judged.decided, judged.error) == (False, "decided without an answer"), reading
