"""Prompts longer than a model's context window are caught before the call: distractor
paragraphs are dropped first (last first, supporting ones never), then that one request fails
with its reason; the rest of the batch completes."""
import json

import pytest

from lmad.backends import open_backend
from lmad.backends.base import ChatRequest
from conftest import REPO
from lmad.prompts import load_prompt
from lmad.solver import solver_request
from test_backend_faults import FaultServer

PROMPT = load_prompt(REPO / "config" / "prompts" / "solver.txt")


def question(n_paragraphs=6, words=40, supporting=(1, 3)):
    context = [{"title": f"Title{i}", "sentences": [" ".join(f"w{i}" for _ in range(words))]} for i in range(n_paragraphs)]
    facts = [{"title": f"Title{i}", "sent_id": 0, "paragraph": i} for i in supporting]
    return {"qid": "q", "dataset": "hotpotqa", "benchmark": "hotpotqa", "answer_type": "span",
            "question": "Who is it?", "context": context, "supporting_facts": facts}


def words(req):
    return sum(len(c.split()) for _, c in req.messages)


def scripted(tmp_path, window):
    return open_backend({"backend": "scripted", "name": "s", "model": "s", "max_model_len": window}, tmp_path)


def test_distractors_are_dropped_last_first_until_the_prompt_fits(tmp_path):
    q = question()
    full = solver_request(PROMPT, q, 0.0, 1, max_tokens=16)
    # room for the prompt without its last two distractors (paragraphs 5 and 4), not for more
    window = words(full) - 2 * 41 + 16
    backend = scripted(tmp_path, window)
    [out] = backend.generate([full])
    assert out.finish_reason == "stop" and backend.shortened == 1 and "shortened=1" in backend.stats()
    [sent] = backend.inner.calls
    text = sent.messages[-1][1]
    assert "Title4" not in text and "Title5" not in text
    assert all(f"Title{i}" in text for i in (0, 1, 2, 3))
    assert words(sent) + 16 <= window
    # the answer is stored under the request's own key: served again without any model call
    again = scripted(tmp_path, window)
    assert again.generate([full])[0].cached and not again.loaded


def test_supporting_paragraphs_are_never_dropped_and_the_request_fails_alone(tmp_path):
    q = question()
    long = solver_request(PROMPT, q, 0.0, 1, max_tokens=16)
    short = ChatRequest(messages=(("user", "a short question"),), max_tokens=16)
    window = 60  # less than the two supporting paragraphs need
    backend = scripted(tmp_path, window)
    out = backend.generate([short, long, short.__class__(messages=(("user", "another"),), max_tokens=16)])
    assert [c.finish_reason for c in out] == ["stop", "error", "stop"]
    assert out[1].error.startswith("context_overflow: prompt of") and "also with all 4 distractor" in out[1].error
    assert "context_overflow=1" in backend.stats()
    sent = [c.messages[-1][1] for c in backend.inner.calls]
    assert sent == ["a short question", "another"]  # the long one never reached the model
    # a failure is not stored: a rerun with a larger window computes it
    bigger = scripted(tmp_path, 10_000)
    again = bigger.generate([long])
    assert again[0].finish_reason == "stop" and not again[0].cached


def test_without_a_window_nothing_is_checked(tmp_path):
    backend = open_backend({"backend": "scripted", "name": "s", "model": "s"}, tmp_path)
    assert backend.generate([solver_request(PROMPT, question(words=2000), 0.0, 1, 16)])[0].finish_reason == "stop"


def test_fallbacks_leave_the_cache_key_unchanged():
    q = question()
    req = solver_request(PROMPT, q, 0.0, 1, 16)
    plain = ChatRequest(messages=req.messages, temperature=req.temperature, max_tokens=16, seed=1)
    assert req.key("m") == plain.key("m") and req == plain


def test_openai_server_refusing_one_long_request_fails_it_alone(tmp_path):
    """vLLM's server answers 400 "maximum context length" for a prompt past max_model_len."""
    server = FaultServer()
    handler = server.httpd.RequestHandlerClass
    original = handler.do_POST

    def do_post(self):
        length = int(self.headers["Content-Length"])
        body = self.rfile.read(length)
        if b"LONG" in body:
            blob = json.dumps({"error": {"message": "This model's maximum context length is 2048 tokens. However, "
                                                     "you requested 4100 tokens.", "code": 400}}).encode()
            self.send_response(400)
            self.send_header("Content-Length", str(len(blob)))
            self.end_headers()
            self.wfile.write(blob)
            return
        self.rfile = __import__("io").BytesIO(body)
        self.headers.replace_header("Content-Length", str(length))
        original(self)

    handler.do_POST = do_post
    try:
        spec = {"backend": "openai", "name": "fake", "model": "served", "base_url": server.url, "backoff_s": 0.01}
        backend = open_backend(spec, tmp_path)
        reqs = [ChatRequest(messages=(("user", t),), max_tokens=8) for t in ("a", "LONG " * 50, "b")]
        out = backend.generate(reqs)
        assert [c.finish_reason for c in out] == ["stop", "error", "stop"]
        assert "context_overflow: server refused: This model's maximum context length" in out[1].error
        assert out[0].text == "Answer: a" and out[2].text == "Answer: b"
        assert len(open_backend(spec, tmp_path).generate(reqs[:1])) == 1
    finally:
        handler.do_POST = original
        server.close()


@pytest.mark.model
def test_embedded_model_fails_only_the_over_long_request(smollm2_dir, tmp_path):
    """The real tokenizer and chat template count the prompt; the window is the config's."""
    spec = {"backend": "transformers", "name": "smollm2-135m", "model": str(smollm2_dir), "threads": 2,
            "max_model_len": 120}
    backend = open_backend(spec, tmp_path)
    short = [ChatRequest(messages=(("user", f"Say {w}."),), max_tokens=4) for w in ("yes", "no")]
    long = ChatRequest(messages=(("user", "word " * 400),), max_tokens=4)
    out = backend.generate([short[0], long, short[1]])
    assert [c.finish_reason != "error" for c in out] == [True, False, True]
    assert out[1].error.startswith("context_overflow: prompt of") and "window 120" in out[1].error
    assert backend.inner.prompt_tokens(long) > 400 and backend.overflow == 1
