"""The LMAD commit guard: verbatim quotations, subject/relation preservation, policies."""

import dataclasses

import pytest
from hypothesis import given, strategies as st

from lmad.protocols.localized_debate.commit_guard import (
    Check,
    GuardResult,
    check_evidence,
    check_relation,
    check_subject,
    commit_guard,
    find_quote,
    normalize_verbatim,
    question_terms,
    quote_core,
)
from lmad.protocols.localized_debate.resolve import parse_repair
from lmad.registry import METHODS, names

CONTEXT = [
    {"title": "Buck-Tick", "sentences": ["Buck-Tick (stylized as BUCK-TICK) is a Japanese rock band, formed in "
                                         "Fujioka, Gunma in 1983.", "Its singer is Atsushi Sakurai."]},
    {"title": "Hayden (musician)", "sentences": ["Hayden is a Canadian singer-songwriter from Thornhill, Ontario.",
                                                 "He released “Everything I Long For” in 1995."]},
    {"title": "Arthur Gore", "sentences": ["Arthur Gore (1703–1773) was an Irish peer."]},
]
QUESTION = {"question": "Hayden is a singer-songwriter from Canada, but where does Buck-Tick hail from?",
            "context": CONTEXT}


@pytest.mark.parametrize("quote", [
    "formed in Fujioka, Gunma in 1983",                         # exact
    "FORMED IN FUJIOKA, GUNMA IN 1983",                         # case
    "formed  in\nFujioka,\tGunma in 1983",                      # whitespace runs
    "“a Japanese rock band, formed in Fujioka, Gunma in 1983.”",  # curly quotes around, trailing period
    '"formed in Fujioka, Gunma in 1983..."',                    # straight quotes, trailing ellipsis
    "…is a Japanese rock band",                                 # leading ellipsis (NFKC → ...)
    'He released "Everything I Long For" in 1995',              # straight quotes for curly ones in the text
    "Arthur Gore (1703-1773) was an Irish peer",                # hyphen for the en dash in the text
    "Buck-Tick (stylized as BUCK-TICK) is",                     # parentheses are content, kept
    "Ｆｏｒｍｅｄ in Fujioka, Gunma",                            # full-width letters (NFKC)
    "Gunma in 1983. Its singer is",                             # spans two sentences of one passage
])
def test_verbatim_positives(quote):
    ok, detail = find_quote(quote, CONTEXT, min_words=3)
    assert ok, detail


@pytest.mark.parametrize("quote, why", [
    ("formed in Fujioka Gunma in 1983", "not in any passage"),         # a dropped comma is a change
    ("formed in Fujioka, Gunma, in 1983", "not in any passage"),       # an added comma too
    ("Buck-Tick was formed in Fujioka, Gunma", "not in any passage"),  # paraphrase
    ("a Japanese rock band [...] in 1983", "not in any passage"),      # internal abridgment
    ("a Japanese rock band ... in 1983", "not in any passage"),
    ("Thornhill, Ontario. Buck-Tick (stylized", "not in any passage"),  # spans two passages
    ("Fujioka, Gunma", "too short (2 < 3 words)"),
    ("  “ ” ", "too short (0 < 3 words)"),
    ("Hayden (musician)", "too short"),                                # titles are not evidence either
])
def test_verbatim_negatives(quote, why):
    ok, detail = find_quote(quote, CONTEXT, min_words=3)
    assert not ok and detail.startswith(why)


def test_normalization_is_explicit():
    assert normalize_verbatim("  A\u00a0B\u2003C “d” ‘e’ x–y—z ") == "a b c \"d\" 'e' x-y-z"
    assert quote_core(' "…Formed in Fujioka." ') == "formed in fujioka"


def test_evidence_needs_a_quotation_and_all_of_them():
    assert check_evidence([], CONTEXT, 3) == (False, "no quotation")
    ok, detail = check_evidence(["formed in Fujioka, Gunma in 1983", "formed in Tokyo in 1983"], CONTEXT, 3)
    assert not ok and detail == 'quote 1: verbatim in "Buck-Tick"; quote 2: not in any passage'


def test_question_terms():
    assert question_terms("Who is the paternal grandfather of Arthur Gore, 2nd Earl of Arran?") == (
        ["arthur gore", "2nd earl of arran"], ["paternal", "grandfather"])
    assert question_terms(QUESTION["question"]) == (
        ["hayden", "canada", "buck-tick"], ["singer-songwriter", "hail"])
    assert question_terms("Do the Danube and the Rhine both flow into the North Sea?") == (
        ["danube", "rhine", "north sea"], ["flow"])
    # a question-initial auxiliary or modal is not a subject
    assert question_terms("Were Scott Derrickson and Ed Wood of the same nationality?") == (
        ["scott derrickson", "ed wood"], ["nationality"])
    assert question_terms("Might Ludwig van Beethoven have met Mozart?")[0] == ["ludwig van beethoven", "mozart"]


def test_subject_and_relation_checks_record_their_evidence():
    q = QUESTION["question"]
    assert check_subject(q, ["BUCK-TICK hails from Fujioka, Gunma."]) == (
        True, "matched ['buck-tick'] of subject spans ['hayden', 'canada', 'buck-tick']")
    assert check_relation(q, ["BUCK-TICK hails from Fujioka, Gunma."]) == (
        True, "matched ['hail'] of relation words ['singer-songwriter', 'hail']")
    # drifted to another entity / relation
    ok, detail = check_subject(q, ["X Japan was formed in Tateyama."])
    assert not ok and detail.startswith("matched []")
    assert not check_relation(q, ["Buck-Tick was formed in Fujioka, Gunma."])[0]
    assert check_subject("when was it built?", ["anything"]) == (True, "n/a: the question has no subject spans")
    assert check_relation("Who is Arthur Gore?", ["x"]) == (True, "n/a: the question has no relation words")
    # possessives and inflections
    assert check_subject("Where did Arran's father live?", ["The Arran family"])[0]
    assert check_relation("Which rivers flow into the sea?", ["The Elbe flows north."])[0]


def test_policies_gate_on_different_checks():
    good = parse_repair('{"nodes": ["Buck-Tick hails from Fujioka, Gunma."], '
                        '"quotes": ["formed in Fujioka, Gunma in 1983"]}')
    unsupported = parse_repair('{"nodes": ["Buck-Tick hails from Fujioka, Gunma."], "quotes": ["made up words here"]}')
    drifted = parse_repair('{"nodes": ["Atsushi Sakurai sings."], "quotes": ["Its singer is Atsushi Sakurai"]}')
    broken = parse_repair('{"nodes": ["Buck-Tick hails')
    empty = parse_repair('{"nodes": [" "], "quotes": []}')
    verdict = {p: {name: commit_guard(p, QUESTION, r, 3).admitted
                   for name, r in [("good", good), ("unsupported", unsupported), ("drifted", drifted),
                                   ("broken", broken), ("empty", empty)]}
               for p in ("strict", "concrete", "always")}
    assert verdict["strict"] == {"good": True, "unsupported": False, "drifted": False, "broken": False, "empty": False}
    assert verdict["concrete"] == {"good": True, "unsupported": True, "drifted": True, "broken": False, "empty": False}
    assert all(verdict["always"].values())
    result = commit_guard("concrete", QUESTION, drifted, 3)
    assert [(c.check, c.passed, c.required) for c in result.checks] == [
        ("concrete", True, True), ("subject", False, False), ("relation", False, False),
        ("relation_model", False, False), ("evidence", True, False)]
    assert commit_guard("strict", QUESTION, broken, 3).checks[0].detail.startswith("no explicit claim: not JSON")
    with pytest.raises(ValueError, match="unknown commit policy"):
        commit_guard("lenient", QUESTION, good, 3)
    plain = {"lmad": "strict", "lmad-concrete": "concrete", "lmad-always": "always",
             "lmad@friendly": "strict", "lmad@hostile": "strict"}  # toned Strict LMAD
    # each policy with each selected society (lmad+ac-greedy …) keeps its policy
    societies = {f"{m}+{sel}": policy for m, policy in list(plain.items())[:3]
                 for sel in ("ac-greedy", "sc-greedy", "top-k", "default")}
    graph = {"lmad-dag": "strict", "lmad-dag-concrete": "concrete", "lmad-dag-always": "always"}  # graph LMAD
    assert {m: METHODS[m].policy for m in names("lmad")} == plain | societies | graph


DERRICKSON = "Were Scott Derrickson and Ed Wood of the same nationality?"


def test_derrickson_repair_passes_the_lexical_check():
    """The issue's example: the correct repair names no "nationality" but answers it for both
    compared entities; a whole entity span, not a stray capitalised word, is the subject."""
    repair = ["Scott Derrickson is American and Ed Wood is American."]
    assert check_subject(DERRICKSON, repair)[0]
    ok, detail = check_relation(DERRICKSON, repair)
    assert ok and detail.startswith("comparison")
    # one side only: the comparison is not addressed
    assert not check_relation(DERRICKSON, ["Scott Derrickson is American."])[0]
    # a part of a name is not the entity, and "Were" is no subject
    assert not check_subject(DERRICKSON, ["Scott Joplin and Wood Allen were American."])[0]
    assert not check_subject(DERRICKSON, ["They were American."])[0]
    q = {"question": DERRICKSON, "context": [{"title": "x", "sentences": ["Scott Derrickson is an American director."]}]}
    good = parse_repair('{"nodes": ["Scott Derrickson is American and Ed Wood is American."], '
                        '"quotes": ["Scott Derrickson is an American director"]}')
    assert commit_guard("strict", q, good, 3, relation="lexical").admitted


def test_relation_mode_chooses_the_required_check():
    good = parse_repair('{"nodes": ["Buck-Tick hails from Fujioka, Gunma."], '
                        '"quotes": ["formed in Fujioka, Gunma in 1983"]}')
    for verdict, admitted in [("yes", True), ("no", False), (None, False), ("", False)]:
        result = commit_guard("strict", QUESTION, good, 3, relation="model", model_verdict=verdict)
        assert result.admitted is admitted, verdict
        checks = {c.check: c for c in result.checks}
        assert checks["subject"].passed and checks["relation"].passed  # lexical recorded, not required
        assert not checks["subject"].required and checks["relation_model"].required
    # lexical ignores the model's no (it is recorded)
    lexical = commit_guard("strict", QUESTION, good, 3, relation="lexical", model_verdict="no")
    assert lexical.admitted and not {c.check: c for c in lexical.checks}["relation_model"].passed
    with pytest.raises(ValueError, match="unknown relation check"):
        commit_guard("strict", QUESTION, good, 3, relation="vibes")


@given(st.text(max_size=80), st.lists(st.text(max_size=40), max_size=3))
def test_lexical_checks_never_raise(question, nodes):
    for check in (check_subject, check_relation):
        ok, detail = check(question, nodes)
        assert isinstance(ok, bool) and isinstance(detail, str)


@given(st.lists(st.tuples(st.text(max_size=12), st.booleans(), st.booleans(), st.text(max_size=20)), max_size=4))
def test_guard_records_hold_every_check_field(checks):
    """records() is written field by field (asdict is slow): a field added to Check must reach it."""
    result = GuardResult("always", True, [Check(*c) for c in checks])
    assert result.records() == [dataclasses.asdict(c) for c in result.checks]
