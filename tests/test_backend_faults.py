"""The OpenAI-compatible backend against a hostile server (127.0.0.1, bounded in time): 500s,
timeouts, truncated JSON, wrong shapes and lone surrogates, then good replies. Bounded retries;
one error type (BackendError) naming backend, model, URL and the last cause; nothing partial
written; a killed stage re-sends no finished call."""
import json
import os
import signal
import subprocess
import sys
import threading
import time
import traceback

import pytest

from conftest import REPO, stored_calls
from json_http import JsonHandler, serve_local
from lmad.backends import ChatRequest, open_backend
from lmad.backends.base import BackendError
from lmad.backends.openai_backend import OpenAIBackend

GOOD = "good"
# each fault: (status, raw body) or a delay past the client's timeout
FAULTS = {
    "500": (500, b'{"error": {"message": "internal error"}}'),
    "truncated": (200, b'{"choices": [{"message": {"content": "trunc'),
    "no choices": (200, b'{"choices": []}'),
    "content a number": (200, b'{"choices": [{"message": {"content": 5}, "finish_reason": "stop"}]}'),
    "a list": (200, b'[1, 2]'),
    "tokens a word": (200, b'{"choices": [{"message": {"content": "x"}}], "usage": {"prompt_tokens": "many"}}'),
    "not json": (200, b'<html>bad gateway</html>'),
    # a 200 with no text and no refusal is a glitch, never an (empty) answer
    "null content": (200, b'{"choices": [{"message": {"content": null}, "finish_reason": "stop"}]}'),
}
TIMEOUT_S = 0.4


class FaultServer:
    """Answers POSTs from a script of faults (shared by all requests, in arrival order), then well."""

    def __init__(self, script=(), delay_s=0.0, surrogate=False):
        self.script = list(script)
        self.delay_s = delay_s
        self.surrogate = surrogate
        self.seen: list[str] = []  # user message of every request that reached the server
        self.answered: list[str] = []
        self.lock = threading.Lock()
        server = self

        class Handler(JsonHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                user = body["messages"][-1]["content"]
                with server.lock:
                    server.seen.append(user)
                    fault = server.script.pop(0) if server.script else GOOD
                if fault == "timeout":
                    time.sleep(TIMEOUT_S * 3)
                    fault = GOOD  # too late: the client has given up
                if fault == "refusal":
                    return self._send(200, b'{"choices": [{"message": {"content": null, "refusal": "I cannot help '
                                           b'with that."}, "finish_reason": "stop"}]}')
                if fault != GOOD:
                    return self._send(*FAULTS[fault])
                time.sleep(server.delay_s)
                # "\ud800" in JSON is valid JSON text that decodes to a lone surrogate
                text = ("x\\ud800 Answer: " if server.surrogate else "Answer: ") + user
                self._send(200, json.dumps({"choices": [{"message": {"content": "@"}, "finish_reason": "stop"}],
                                            "usage": {"prompt_tokens": 3, "completion_tokens": 2}})
                           .replace('"@"', json.dumps(text).replace("\\\\ud800", "\\ud800")).encode())
                with server.lock:
                    server.answered.append(user)

        self.httpd, self.url = serve_local(Handler)
        self.httpd.handle_error = lambda *a: None  # a client killed mid-reply is expected here

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def serve():
    servers = []

    def start(*args, **kw):
        servers.append(FaultServer(*args, **kw))
        return servers[-1]

    yield start
    for s in servers:
        s.close()


def req(text):
    return ChatRequest(messages=(("user", text),), max_tokens=8)


def client(server, **kw):
    return OpenAIBackend("fake", "served-model", server.url, timeout_s=TIMEOUT_S, backoff_s=0.01, **kw)


def spec(server, **kw):
    return {"backend": "openai", "name": "fake", "model": "served-model", "base_url": server.url,
            "timeout_s": TIMEOUT_S, "backoff_s": 0.01, "max_concurrency": 1, **kw}


def test_every_fault_is_retried_then_the_good_reply_is_used(serve):
    server = serve([*FAULTS, "timeout"])
    t0 = time.monotonic()
    [out] = client(server, max_retries=len(FAULTS) + 1).generate([req("q")])
    assert out.text == "Answer: q" and out.prompt_tokens == 3
    assert len(server.seen) == len(FAULTS) + 2  # every fault cost exactly one attempt
    assert time.monotonic() - t0 < 30


@pytest.mark.parametrize("fault", [*FAULTS, "timeout"])
def test_a_fault_that_persists_raises_one_named_error(serve, fault):
    server = serve([fault] * 3)
    with pytest.raises(BackendError) as err:
        client(server, max_retries=2).generate([req("q")])
    message = str(err.value)
    assert len(server.seen) == 3  # bounded: 1 + max_retries attempts
    for part in ("openai", "served-model", server.url, "3 attempts", "last cause"):
        assert part in message, (part, message)
    expected = {"500": "HTTP 500: internal error", "timeout": f"ReadTimeout after {TIMEOUT_S}s"}.get(fault, "malformed reply")
    assert expected in message
    # one error, not a chain of a raw JSONDecodeError and "no running event loop"
    assert err.value.__cause__ is None and err.value.__context__ is None
    assert "During handling" not in "".join(traceback.format_exception(err.value))


def test_a_refusal_is_recorded_as_a_refusal_and_not_retried(serve, tmp_path):
    server = serve(["refusal"])
    [out] = open_backend(spec(server), tmp_path).generate([req("q")])
    assert (out.text, out.finish_reason) == ("", "refusal") and len(server.seen) == 1
    again = open_backend(spec(server), tmp_path)
    assert again.generate([req("q")])[0].finish_reason == "refusal" and again.hits == 1 and len(server.seen) == 1


def test_a_lone_surrogate_is_sanitized_and_stored(serve, tmp_path):
    server = serve(surrogate=True)
    backend = open_backend(spec(server), tmp_path)
    [out] = backend.generate([req("s")])
    assert out.text == "x\ufffd Answer: s" and out.sanitized and "sanitized=1" in backend.stats()
    again = open_backend(spec(server), tmp_path)
    assert again.generate([req("s")])[0].cached and len(server.seen) == 1
    assert not list(tmp_path.rglob(".tmp-*"))


def test_a_failed_batch_keeps_its_finished_calls_and_writes_nothing_partial(serve, tmp_path):
    server = serve([GOOD, GOOD, "truncated", "truncated", "truncated"])
    with pytest.raises(BackendError):
        open_backend(spec(server, max_retries=2), tmp_path).generate([req(f"q{i}") for i in range(4)])
    assert len(stored_calls(tmp_path)) == 2  # the two finished calls, nothing of the failed one
    for seg in tmp_path.rglob("*.calls.jsonl"):
        assert seg.read_bytes().endswith(b"\n")
    server.seen.clear()
    resumed = open_backend(spec(server), tmp_path)  # the server behaves again
    out = resumed.generate([req(f"q{i}") for i in range(4)])
    assert [c.text for c in out] == [f"Answer: q{i}" for i in range(4)]
    assert sorted(server.seen) == ["q2", "q3"] and (resumed.hits, resumed.misses) == (2, 2)


STAGE = """
import sys
from lmad.backends import ChatRequest, open_backend
spec = {"backend": "openai", "name": "fake", "model": "served-model", "base_url": sys.argv[1], "max_concurrency": 2}
open_backend(spec, sys.argv[2]).generate([ChatRequest(messages=(("user", f"q{i}"),), max_tokens=8) for i in range(20)])
"""


def test_a_killed_stage_resends_no_finished_call(serve, tmp_path):
    """kill -9 mid-stage with the openai default chunk (512): the calls that returned are kept."""
    server = serve(delay_s=0.05)
    env = {**os.environ, "PYTHONPATH": str(REPO / "workflow")}
    proc = subprocess.Popen([sys.executable, "-c", STAGE, server.url, str(tmp_path)], env=env, start_new_session=True)
    deadline = time.monotonic() + 60
    while len(server.answered) < 8 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.01)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    time.sleep(0.2)
    finished = len(stored_calls(tmp_path))
    sent_before = set(server.seen)
    assert 8 - 2 <= finished < 20  # answered minus at most the 2 in flight
    server.seen.clear()
    resumed = open_backend({**spec(server), "max_concurrency": 2}, tmp_path)
    resumed.generate([req(f"q{i}") for i in range(20)])
    assert len(server.seen) == 20 - finished and resumed.hits == finished  # no finished call re-sent
    assert len(sent_before) + len(server.seen) - len(sent_before & set(server.seen)) == 20
