"""When Debate Helps' debate prompts (docs/paper-configs.md "`config/wdh.yaml` — When Debate Helps"):
config/wdh.yaml debates with the verification prompt of its main evaluation (§A.2 / §A.8), its own
template under config/prompts/wdh/, and config/wdh-standard-prompt.yaml puts back the standard
compare-and-revise prompt for §A.9's comparison; the shared defaults are untouched."""
import string

import pytest
import yaml
from snakemake.utils import validate

from conftest import REPO
from lmad.config_schema import schema_file
from lmad.plan import Plan
from lmad.prompts import load_prompt, question_fields
from test_plan import wildcards

VERIFY = "config/prompts/wdh/debate_verify.txt"
STANDARD = "config/prompts/debate_revise.txt"
SCHEMA = schema_file()  # the registries' lists filled in, as a run validates
DEBATE = {"self_label": "Agent 1", "own": "<own>", "others": "<others>", "advice": "", "debate": ""}
QUESTIONS = {
    "numeric": {"question": "What is 3 + 4?", "answer_type": "numeric", "benchmark": "gsm8k", "context": []},
    "math": {"question": "Find $x$ if $2x = 6$.", "answer_type": "math", "benchmark": "math500", "context": []},
    "choice": {"question": "Which is a lepton?", "answer_type": "choice", "benchmark": "gpqa-diamond", "context": [],
               "choices": ["proton", "muon", "pion", "neutron"]},
}


def wdh(*overlays) -> dict:
    config = yaml.safe_load((REPO / "config" / "wdh.yaml").read_text())
    for name in overlays:
        for key, value in yaml.safe_load((REPO / "config" / name).read_text()).items():
            config[key] = {**config.get(key, {}), **value} if isinstance(value, dict) else value
    validate(config, schema=SCHEMA)
    return config


def render(path, question):
    return "\n".join(t for _, t in load_prompt(REPO / path).render(**question_fields(question), **DEBATE))


def test_the_main_evaluation_debates_with_the_verification_prompt():
    config = wdh()
    assert config["prompts"]["debate_revise"] == VERIFY
    # every debating method's revision rounds read it: Vanilla Debate and the selected societies
    plan = Plan(config)
    for method in ("mad", "mad+ac-greedy", "mad+sc-greedy", "mad+top-k"):
        got = plan.debate.round_inputs(wildcards(backbone="qwen3-4b", debate_method=method, debate_round="1"))
        assert got["prompt_debate_revise"] == VERIFY, method


def test_the_comparison_overlay_puts_back_the_standard_prompt_and_nothing_else():
    assert yaml.safe_load((REPO / "config" / "wdh-standard-prompt.yaml").read_text()) == {
        "prompts": {"debate_revise": STANDARD}}
    config = wdh("wdh-standard-prompt.yaml")
    assert config["prompts"]["debate_revise"] == STANDARD and config["prompts"]["solver"] == wdh()["prompts"]["solver"]


@pytest.mark.parametrize("kind", sorted(QUESTIONS))
def test_the_verification_prompt_asks_for_the_deciding_point_and_the_same_answer_line(kind):
    q = QUESTIONS[kind]
    verify, standard = render(VERIFY, q), render(STANDARD, q)
    assert "$" not in verify.replace(q["question"], "")  # every field filled
    assert "matters most for whether an answer is correct" in verify and "Check that point yourself" in verify
    assert "<own>" in verify and "<others>" in verify and q["question"] in verify
    # both variants end with the task's answer format (§A.8), the line the extraction reads
    form = 'a last line of the form "Answer: '
    assert verify.rsplit(form, 1)[1] == standard.rsplit(form, 1)[1]
    # and take the same fields, so the engine fills either
    assert _fields(VERIFY) == _fields(STANDARD)


def _fields(path) -> set[str]:
    return {f[1] or f[2] for f in string.Template.pattern.findall(load_prompt(REPO / path).user) if f[1] or f[2]}


def test_the_shared_default_stays_the_standard_prompt():
    assert "matters most" not in (REPO / STANDARD).read_text()
    assert "give your updated answer" in (REPO / STANDARD).read_text()
