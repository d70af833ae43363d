"""Fake ``python -m vllm.entrypoints.openai.api_server``: ``GET /v1/models`` and
``POST /v1/chat/completions``, answered by the scripted test double. Every request is
appended to ``$FAKE_VLLM_REQUESTS`` (one JSON line) when that variable is set."""
import argparse
import json
import os
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from lmad.backends.base import ChatRequest
from lmad.backends.scripted import ScriptedBackend


def _request(body: dict) -> ChatRequest:
    constraint = None
    so = body.get("structured_outputs")
    if so:
        constraint = dict(so)
    elif body.get("response_format", {}).get("type") == "json_schema":
        constraint = {"json": body["response_format"]["json_schema"]["schema"]}
    return ChatRequest(messages=tuple((m["role"], m["content"]) for m in body["messages"]),
                       temperature=body["temperature"], max_tokens=body["max_tokens"], seed=body["seed"],
                       stop=tuple(body.get("stop") or ()), constraint=constraint)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--served-model-name", required=True)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    args, _ = ap.parse_known_args()
    backend = ScriptedBackend(args.served_model_name)
    name = args.served_model_name

    class Handler(BaseHTTPRequestHandler):
        def _send(self, code: int, data: dict) -> None:
            blob = json.dumps(data).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(blob)))
            self.end_headers()
            self.wfile.write(blob)

        def do_GET(self):
            if self.path == "/v1/models":
                self._send(200, {"object": "list", "data": [{"id": name, "object": "model"}]})
            else:
                self._send(404, {"error": {"message": "not found"}})

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            if self.path != "/v1/chat/completions" or body.get("model") != name:
                self._send(404, {"error": {"message": f"no model {body.get('model')!r} here"}})
                return
            if os.environ.get("FAKE_VLLM_REQUESTS"):
                with open(os.environ["FAKE_VLLM_REQUESTS"], "a") as fh:
                    fh.write(json.dumps(body) + "\n")
            out = backend.generate([_request(body)])[0]
            self._send(200, {"choices": [{"index": 0, "message": {"role": "assistant", "content": out.text},
                                          "finish_reason": out.finish_reason}],
                             "usage": {"prompt_tokens": out.prompt_tokens, "completion_tokens": out.completion_tokens}})

        def log_message(self, *a):  # quiet
            pass

    ThreadingHTTPServer((args.host, args.port), Handler).serve_forever()


if __name__ == "__main__":
    main()
