import json
import threading
import time

import pytest

from json_http import JsonHandler, serve_local
from lmad.backends.base import ChatRequest
from lmad.backends.openai_backend import OpenAIBackend, OpenAIBackendError, request_body


class FakeServer:
    """OpenAI-compatible chat endpoint on 127.0.0.1 with an ephemeral port."""

    def __init__(self):
        self.requests: list[dict] = []
        self.headers: list[dict] = []
        self.fail_first = 0  # answer 503 to this many calls
        self.fail_status = 503
        self.reject = False  # answer 400 to every call
        self.delay_s = 0.0
        self.in_flight = 0
        self.max_in_flight = 0
        self.lock = threading.Lock()
        server = self

        class Handler(JsonHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with server.lock:
                    server.requests.append(body)
                    server.headers.append({k.lower(): v for k, v in self.headers.items()})
                    fail = server.fail_first > 0
                    if fail:
                        server.fail_first -= 1
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                try:
                    if self.path != "/v1/chat/completions":
                        return self._send(404, {"error": {"message": f"no route {self.path}"}})
                    if server.reject:
                        return self._send(400, {"error": {"message": "max_tokens is too large"}})
                    if fail:
                        return self._send(server.fail_status, {"error": {"message": "overloaded"}})
                    if server.delay_s:
                        # later prompts answer sooner, so completion order differs from request order
                        idx = int(body["messages"][-1]["content"].rsplit(" ", 1)[-1] or 0)
                        time.sleep(server.delay_s / (1 + idx % 5))
                    user = body["messages"][-1]["content"]
                    text = f"echo[{body['seed']}]: {user}"
                    finish = "length" if body["max_tokens"] < 5 else "stop"
                    self._send(200, {
                        "id": "x", "object": "chat.completion", "model": body["model"],
                        "choices": [{"index": 0, "finish_reason": finish,
                                     "message": {"role": "assistant", "content": text}}],
                        "usage": {"prompt_tokens": len(user.split()), "completion_tokens": len(text.split()),
                                  "total_tokens": len(user.split()) + len(text.split())},
                    })
                finally:
                    with server.lock:
                        server.in_flight -= 1

        self.httpd, self.url = serve_local(Handler)

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server():
    s = FakeServer()
    yield s
    s.close()


def req(text, **kw):
    return ChatRequest(messages=(("system", "be brief"), ("user", text)), **kw)


def backend(server, **kw):
    kw.setdefault("backoff_s", 0.01)
    kw.setdefault("timeout_s", 5)
    return OpenAIBackend("fake", "served-model", server.url, **kw)


def test_order_preserved_with_concurrency(server):
    server.delay_s = 0.05
    be = backend(server, max_concurrency=4)
    reqs = [req(f"question {i}", seed=i) for i in range(20)]
    out = be.generate(reqs)
    assert [c.text for c in out] == [f"echo[{i}]: question {i}" for i in range(20)]
    assert all(c.finish_reason == "stop" and c.prompt_tokens == 2 and c.completion_tokens == 3 for c in out)
    assert len(server.requests) == 20
    assert 1 < server.max_in_flight <= 4


def test_retry_then_success(server):
    server.fail_first = 3
    out = backend(server, max_retries=5).generate([req("hello")])
    assert out[0].text == "echo[0]: hello"
    assert len(server.requests) == 4


def test_429_is_retried(server):
    server.fail_first, server.fail_status = 1, 429
    assert backend(server).generate([req("hi")])[0].text == "echo[0]: hi"
    assert len(server.requests) == 2


def test_retries_exhausted(server):
    server.fail_first = 100
    with pytest.raises(OpenAIBackendError, match=r"3 attempts.*503.*overloaded"):
        backend(server, max_retries=2).generate([req("hello")])
    assert len(server.requests) == 3


def test_400_fails_fast_with_message(server):
    server.reject = True
    with pytest.raises(OpenAIBackendError, match=r"HTTP 400: max_tokens is too large"):
        backend(server, max_retries=5).generate([req("hello")])
    assert len(server.requests) == 1


def test_connection_error_is_retried_then_raises():
    # a port nobody listens on: bind, read the port, close
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    be = OpenAIBackend("fake", "m", f"http://127.0.0.1:{port}/v1", max_retries=2, backoff_s=0.01, timeout_s=2)
    with pytest.raises(OpenAIBackendError, match="3 attempts"):
        be.generate([req("hello")])


def test_fields_sent(server):
    be = backend(server)
    reqs = [
        req("a", temperature=0.7, max_tokens=3, seed=42, stop=("\n\n", "END")),
        req("b", constraint={"choice": ["yes", "no"]}),
        req("c", constraint={"regex": r"[0-9]+"}),
        req("d", constraint={"json": {"type": "object", "properties": {"x": {"type": "integer"}}}}),
    ]
    out = be.generate(reqs)
    assert out[0].finish_reason == "length"
    sent = {r["messages"][-1]["content"]: r for r in server.requests}
    a = sent["a"]
    assert a["model"] == "served-model"
    assert a["messages"] == [{"role": "system", "content": "be brief"}, {"role": "user", "content": "a"}]
    assert (a["temperature"], a["max_tokens"], a["seed"], a["stop"]) == (0.7, 3, 42, ["\n\n", "END"])
    assert "structured_outputs" not in a and "response_format" not in a
    assert "stop" not in sent["b"]
    assert sent["b"]["structured_outputs"] == {"choice": ["yes", "no"]}
    assert sent["c"]["structured_outputs"] == {"regex": "[0-9]+"}
    assert sent["d"]["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "output", "schema": {"type": "object", "properties": {"x": {"type": "integer"}}}},
    }
    assert request_body("served-model", reqs[1]) == sent["b"]


def test_api_key_from_env(server, monkeypatch):
    monkeypatch.setenv("LMAD_TEST_KEY", "sk-secret")
    backend(server, api_key_env="LMAD_TEST_KEY").generate([req("x")])
    assert server.headers[-1]["authorization"] == "Bearer sk-secret"


def test_no_key_no_header(server, monkeypatch):
    monkeypatch.delenv("LMAD_TEST_KEY", raising=False)
    backend(server, api_key_env="LMAD_TEST_KEY").generate([req("x")])
    assert "authorization" not in server.headers[-1]


def test_model_id_and_empty_batch(server):
    be = backend(server)
    assert be.model_id == "fake"
    assert OpenAIBackend("fake", "m", server.url, revision="r1").model_id == "fake@r1"
    assert be.generate([]) == []
    assert server.requests == []


def test_generate_inside_running_event_loop(server):
    import asyncio

    async def caller():
        return backend(server).generate([req("in loop")])

    assert asyncio.run(caller())[0].text == "echo[0]: in loop"
