"""Du et al.'s own prompt set (config/prompts/du/, selected by config/du-et-al.yaml and
config/du-et-al-cross-model.yaml): the initial answer asks for detailed reasoning and the debate
round shows the agent its own and the others' responses and asks where it agrees or disagrees, as
the seed overview describes; both end with the line the answer extraction reads."""
import string

import pytest
import yaml
from snakemake.utils import validate

from conftest import REPO
from lmad.answers import extract
from lmad.config_schema import schema_file
from lmad.plan import Plan
from lmad.prompts import load_prompt, question_fields
from test_plan import wildcards

SOLVER, REVISE = "config/prompts/du/solver.txt", "config/prompts/du/debate_revise.txt"
DEBATE = {"self_label": "Agent 1", "own": "<own>", "others": "<others>", "advice": "", "debate": ""}
QUESTIONS = {
    "numeric": {"question": "Natalia sold 48 clips in April and half as many in May. How many in all?",
                "answer_type": "numeric", "benchmark": "gsm8k", "context": []},
    "choice": {"question": "Which is a lepton?", "answer_type": "choice", "benchmark": "mmlu", "context": [],
               "choices": ["proton", "muon", "pion", "neutron"]},
}


def config(name: str) -> dict:
    loaded = yaml.safe_load((REPO / "config" / name).read_text())
    validate(loaded, schema=schema_file())
    return loaded


def render(path: str, question: dict) -> str:
    # committed: LMAD's block of established facts, empty for a debate's solver
    return "\n".join(t for _, t in load_prompt(REPO / path).render(**question_fields(question), **DEBATE, committed=""))


@pytest.mark.parametrize("name", ["du-et-al.yaml", "du-et-al-cross-model.yaml"])
def test_the_du_configs_select_their_own_prompts_for_the_initial_answer_and_every_debate_round(name):
    cfg = config(name)
    assert cfg["prompts"]["solver"] == SOLVER and cfg["prompts"]["debate_revise"] == REVISE
    plan = Plan(cfg)
    backbone = plan.backbones[0]
    got = plan.debate.round_inputs(wildcards(backbone=backbone, debate_method="mad", debate_round="1"))
    assert got["prompt_debate_revise"] == REVISE


@pytest.mark.parametrize("kind", sorted(QUESTIONS))
def test_the_prompts_ask_what_the_overview_describes_and_end_with_the_extracted_line(kind):
    q = QUESTIONS[kind]
    solver, revise = render(SOLVER, q), render(REVISE, q)
    for text in (solver, revise):
        assert "$" not in text.replace(q["question"], "") and q["question"] in text  # every field filled
    assert "reasoning in detail" in solver
    assert "<own>" in revise and "<others>" in revise and "agree" in revise and "disagree" in revise
    # the shared default's answer format: the extraction reads the same last line
    default = render("config/prompts/debate_revise.txt", q)
    assert revise.rsplit('"Answer: ', 1)[1] == default.rsplit('"Answer: ', 1)[1]
    assert _fields(REVISE) <= _fields("config/prompts/debate_revise.txt")  # the engine fills either


def _fields(path: str) -> set[str]:
    return {f[1] or f[2] for f in string.Template.pattern.findall(load_prompt(REPO / path).user) if f[1] or f[2]}


def test_a_reply_in_the_asked_form_is_read():
    # the form both prompts ask for, read by the numeric type's extraction
    assert extract("April 48, May 24, so 72.\nAnswer: 72", "numeric")[0] == "72"
