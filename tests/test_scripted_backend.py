"""The test double answers as it always has: its digest and title scan work message by
message (cheaper), and must agree with the joined prompt they stand for."""
import itertools

from hypothesis import given, settings, strategies as st

from lmad.backends import ChatRequest
from lmad.backends.scripted import _TITLE, _digest, _first_titles, _prompt_digest

_PIECE = st.sampled_from(["[1] Alpha: a", "[22] Beta Gamma: b", "[3] no colon", "\n", "\n\n", "x", "é", ":"])
_CONTENT = st.lists(_PIECE | st.text(max_size=12), max_size=8).map("".join)


@settings(max_examples=300, deadline=None)
@given(messages=st.lists(st.tuples(st.sampled_from(["system", "user", "assistant"]), _CONTENT), min_size=1,
                         max_size=3),
       seed=st.integers(0, 2**31), temperature=st.sampled_from([0.0, 0.1, 0.5, 0.9, 1]))
def test_digest_and_titles_by_message_equal_those_of_the_joined_prompt(messages, seed, temperature):
    req = ChatRequest(messages=tuple(messages), temperature=temperature, seed=seed)
    prompt = "\n".join(c for _, c in req.messages)
    assert _prompt_digest(req) == _digest(prompt, seed, temperature)
    for n in (1, 2, 3):
        assert _first_titles(req, n) == [m.group(1) for m in itertools.islice(_TITLE.finditer(prompt), n)]
