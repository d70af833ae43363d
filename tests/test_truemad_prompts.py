"""TrueMAD's own prompt set (config/prompts/truemad/, selected by config/truemad.yaml): the MAD-family
initial prompt is the question plus the dataset's output instruction (§C.2.1), every answer is asked
for boxed (§C.1 / Table 12), and the shared defaults are untouched. What those prompts ask for is
read back by the answer types' extraction, which never raises on any text."""
import string

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import REPO
from lmad.answers import extract
from lmad.prompts import PromptError, load_prompt, question_fields

SET = REPO / "config" / "prompts" / "truemad"
CONFIG = yaml.safe_load((REPO / "config" / "truemad.yaml").read_text())
AIME = {"question": "Find the remainder when $2^{10}$ is divided by 7.", "answer_type": "numeric",
        "benchmark": "aime", "context": []}
GPQA = {"question": "Which particle is a lepton?", "answer_type": "choice", "benchmark": "gpqa-diamond",
        "context": [], "choices": ["proton", "muon", "pion", "neutron"]}
# the fields a debate call adds to question_fields (lmad.protocols.debate.engine)
DEBATE = {"self_label": "Agent 1", "own": "<own>", "others": "<others>", "advice": "", "debate": "",
          "target_label": "Agent 2", "target_response": "<target>", "responses": "<all>", "concept": "<c>",
          "draft": "<draft>", "critique": "<critique>", "committed": ""}


def render(path, question):
    return load_prompt(path).render(**question_fields(question), **DEBATE)


def test_the_config_selects_the_set_for_every_role_truemad_runs():
    roles = {"solver", "debate_revise", "debate_engage", "debate_advise", "debate_note", "debate_self_critique",
             "debate_io", "debate_cot", "debate_stepback_concept", "debate_stepback_solve", "debate_refine_critique",
             "debate_refine"}
    assert {r: CONFIG["prompts"][r] for r in roles} == {r: f"config/prompts/truemad/{r}.txt" for r in roles}
    assert sorted(p.stem for p in SET.glob("*.txt")) == sorted(roles)


def test_initial_prompt_is_the_question_and_the_output_instruction():
    (role, text), = render(SET / "solver.txt", AIME)  # no system prompt
    assert role == "user"
    assert text == AIME["question"] + "\n\nPut your final answer, a single number, within \\boxed{}."
    (_, text), = render(SET / "solver.txt", GPQA)
    assert text.endswith("(D) neutron\n\nPut the letter of your chosen option (A, B, C or D) within \\boxed{}.")


@pytest.mark.parametrize("name", sorted(p.name for p in SET.glob("*.txt")))
def test_every_template_asks_for_the_boxed_answer_never_an_answer_line_or_a_cap(name):
    prompt = load_prompt(SET / name)
    for q in (AIME, GPQA):
        text = "\n".join(t for _, t in render(SET / name, q))
        assert "Answer:" not in text and "sentences" not in text
        if "$answer_line" in prompt.user:
            assert "\\boxed{}" in text
    # one output instruction for the whole set: every template that has one carries the same
    if prompt.answer_lines:
        assert prompt.answer_lines == load_prompt(SET / "solver.txt").answer_lines


def test_the_shared_defaults_keep_their_answer_line():
    (_, system), (_, user) = load_prompt(REPO / "config" / "prompts" / "solver.txt").render(
        **question_fields(AIME), committed="")
    assert user.endswith('"Answer: <number>".') and "boxed" not in user
    default = load_prompt(REPO / "config" / "prompts" / "debate_revise.txt")
    assert default.answer_lines == ()


def test_an_unknown_answer_type_in_a_set_is_an_error(tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_text("### user\n$question $answer_line\n### answer_line integer\nBox it.\n")
    with pytest.raises(PromptError, match="unknown answer type 'integer'"):
        load_prompt(bad)


def test_a_set_without_a_line_for_the_type_keeps_the_default(tmp_path):
    only_choice = tmp_path / "p.txt"
    only_choice.write_text("### user\n$question $answer_line\n### answer_line choice\nBox one of $option_letters.\n")
    (_, text), = load_prompt(only_choice).render(**question_fields(AIME))
    assert text.endswith('"Answer: <number>".')
    (_, text), = load_prompt(only_choice).render(**question_fields(GPQA))
    assert text.endswith("Box one of A, B, C or D.")


# ------------------------------------------------------------------ extraction of what they ask for

# running text that cannot open a box or a think block
PROSE = st.text(alphabet=st.characters(blacklist_characters="\\<>", blacklist_categories=("Cs",)), max_size=80)


@settings(max_examples=150, deadline=None)
@given(PROSE, st.integers(0, 10**6), PROSE)
def test_a_boxed_number_is_read_as_that_number(before, n, after):
    text = f"{before}\n\\boxed{{{n}}}\n{after}"
    assert extract(text, "numeric") == (str(n), "boxed")
    assert extract(text, "math") == (str(n), "boxed")


@pytest.mark.parametrize("boxed, value", [("\\boxed{042}", "42"), ("\\boxed{ 7 }", "7"), ("\\boxed{1,000}", "1000"),
                                          ("$\\boxed{336}$.", "336"), ("\\boxed{\\textbf{70}}", "70"),
                                          ("\\boxed{1}, then \\boxed{25}", "25")])
def test_boxed_number_forms(boxed, value):
    assert extract(f"So the answer is {boxed}", "numeric")[0] == value


@settings(max_examples=150, deadline=None)
@given(PROSE, st.sampled_from("ABCD"), st.sampled_from(["{x}", "({x})", "\\text{{{x}}}", "\\textbf{{({x})}}",
                                                       " {x} ", "{x})", "{lower}"]), PROSE)
def test_a_boxed_letter_is_read_as_that_option(before, letter, form, after):
    text = f"{before}\n\\boxed{{{form.format(x=letter, lower=letter.lower())}}}\n{after}"
    assert extract(text, "choice", 4) == (letter, "boxed")


def test_a_boxed_letter_outside_the_options_is_not_an_answer():
    assert extract("\\boxed{F}", "choice", 4)[0] == ""
    assert extract("\\boxed{E}", "choice", 5) == ("E", "boxed")


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(list(string.printable) + ["\\boxed{", "\\frac", "(B)", "Answer:", "<think>", "é"]),
                max_size=80).map("".join))
def test_extraction_never_raises(text):
    for kind in ("numeric", "math", "choice"):
        answer, form = extract(text, kind, 4)
        assert isinstance(answer, str) and isinstance(form, str)
