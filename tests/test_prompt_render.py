"""Prompt.render fills a template exactly as ``string.Template.substitute`` does (text, ``$$``,
``${name}``, a missing field, an invalid placeholder), from a parse made once per template."""
from string import Template

import pytest
from hypothesis import given, settings, strategies as st

from lmad.prompts import Prompt, PromptError

FIELDS = {"context": "[1] A: b $x", "question": "Who?", "n": "3"}
PIECES = ["$context", "${question}", "$$", "$n", "text ", "$", "{", "}", "\n", "ü", "${n}x", "$$n", " $ "]


@settings(max_examples=300)
@given(st.lists(st.sampled_from(PIECES), max_size=12).map("".join), st.lists(st.sampled_from(PIECES), max_size=6)
       .map("".join))
def test_render_is_template_substitute(user, system):
    def expected(template):
        try:
            return Template(template).substitute(FIELDS)
        except (KeyError, ValueError) as err:
            return type(err)

    want = [expected(t) for t in ([system] if system else []) + [user]]
    prompt = Prompt(path="p.txt", system=system, user=user)
    if any(isinstance(w, type) for w in want):
        with pytest.raises(PromptError):
            prompt.render(**FIELDS)
    else:
        assert [text for _, text in prompt.render(**FIELDS)] == want


def test_a_missing_field_names_the_template_and_the_field():
    with pytest.raises(PromptError, match=r"p.txt: template needs field 'missing'"):
        Prompt(path="p.txt", system="", user="$question $missing").render(question="q")
