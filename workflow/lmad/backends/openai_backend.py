"""Any OpenAI-compatible chat-completions endpoint (``vllm serve``, a hosted API).

Requests go out concurrently (at most ``max_concurrency`` in flight) over one
``httpx.AsyncClient`` (``httpx2``, the maintained fork with the same API, when plain
``httpx`` is not installed); ``generate`` stays synchronous and returns completions in request
order.

What is sent per request (POST ``{base_url}/chat/completions``)::

    {"model": <model>, "messages": [...], "temperature": t, "max_tokens": n,
     "seed": s, "n": 1,
     "stop": [...],                                  # only when the request has stops
     "chat_template_kwargs": {...},                  # only when the model config sets them
     # constraint, vLLM server extensions:
     "structured_outputs": {"choice": [...]},        # {"choice": [...]}
     "structured_outputs": {"regex": "..."},         # {"regex": "..."}
     "response_format": {"type": "json_schema",      # {"json": schema}
                         "json_schema": {"name": "output", "schema": schema}}}

``structured_outputs`` is the field current vLLM documents for its OpenAI server
(``vllm/entrypoints/openai/chat_completion/protocol.py``: ``structured_outputs:
StructuredOutputsParams | None``); the older ``guided_choice`` / ``guided_regex`` keys
were removed from vLLM, so they are not sent. JSON schemas use the standard OpenAI
``response_format`` which both vLLM and hosted APIs accept.

The API key comes only from the environment variable named by ``api_key_env``; when it
is unset (a local server) no ``Authorization`` header is sent.

Retries: 5xx, 429, connection errors, timeouts and malformed 200 replies (not JSON, not
a chat completion's shape) are retried up to ``max_retries`` times with exponential
backoff (``backoff_s * 2**attempt``, honouring ``Retry-After`` when the server sends
one). Any other 4xx fails at once. Either way the one error raised is
``OpenAIBackendError`` (a ``BackendError``) naming backend, model, URL and the last cause.
Each finished call is reported as it returns (``generate_each``), so the call store keeps
it even if the stage is killed before the rest of the batch is done.
"""
from __future__ import annotations

import asyncio
import logging
import os
import re
from typing import Any, Sequence

from .base import Backend, BackendError, ChatRequest, Completion, OnDone
from .model_files import model_identity, template_identity

log = logging.getLogger(__name__)


def _httpx():
    """``httpx``, or its API-compatible fork ``httpx2`` (what huggingface_hub now pulls in)."""
    try:
        import httpx
    except ImportError:
        try:
            import httpx2 as httpx
        except ImportError as exc:
            raise ImportError("OpenAIBackend needs `httpx` (or `httpx2`): pip install httpx") from exc
    return httpx


class OpenAIBackendError(BackendError):
    """A request the server refused (non-retryable) or that kept failing."""


# How OpenAI-compatible servers refuse a prompt longer than the context window (vLLM: "This
# model's maximum context length is 2048 tokens. However, you requested …"; OpenAI:
# "context_length_exceeded").
_CONTEXT_OVERFLOW = re.compile(r"maximum context length|context_length_exceeded|context length|max_model_len|"
                               r"prompt is too long|too many tokens", re.IGNORECASE)


class _BadReply(ValueError):
    """A 200 reply that is not a chat completion (retried like a transport failure)."""


def request_body(model: str, req: ChatRequest, chat_template_kwargs: dict | None = None,
                 sampling: dict | None = None) -> dict[str, Any]:
    """The JSON body sent for one request (see the module docstring)."""
    body: dict[str, Any] = {
        "model": model,
        "messages": req.chat(),
        "temperature": req.temperature,
        "max_tokens": req.max_tokens,
        "seed": req.seed,
        "n": 1,
    }
    if req.stop:
        body["stop"] = list(req.stop)
    # config models.<name>.sampling, then the call role's override (ChatRequest.sampling);
    # top_k, min_p and repetition_penalty are vLLM's extensions
    body.update(sampling or {})
    body.update(req.sampling)
    if chat_template_kwargs:  # vLLM server extension, e.g. {"enable_thinking": false}
        body["chat_template_kwargs"] = dict(chat_template_kwargs)
    if req.constraint:
        kind, value = next(iter(req.constraint.items()))
        if kind == "choice":
            body["structured_outputs"] = {"choice": list(value)}
        elif kind == "regex":
            body["structured_outputs"] = {"regex": value}
        else:
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "output", "schema": value},
            }
    return body


def _server_message(resp) -> str:
    try:
        data = resp.json()
    except ValueError:
        return resp.text[:2000]
    if isinstance(data, dict):
        err = data.get("error", data)
        if isinstance(err, dict):
            return str(err.get("message") or err)
        return str(err)
    return str(data)[:2000]


class OpenAIBackend(Backend):
    def __init__(self, name: str, model: str, base_url: str, api_key_env: str = "OPENAI_API_KEY",
                 revision: str | None = None, max_concurrency: int = 16, timeout_s: float = 600,
                 max_retries: int = 5, backoff_s: float = 1.0, chat_template_kwargs: dict | None = None,
                 sampling: dict | None = None):
        if max_concurrency < 1:
            raise ValueError("max_concurrency must be >= 1")
        if max_retries < 0:
            raise ValueError("max_retries must be >= 0")
        self.model = model
        # A served model name is not a local folder: identity is name (+ revision).
        self.model_id = template_identity(model_identity(name, None, revision), chat_template_kwargs)
        self.chat_template_kwargs = dict(chat_template_kwargs or {})
        self.sampling = dict(sampling or {})
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.api_key_env = api_key_env
        self.max_concurrency = max_concurrency
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.backoff_s = backoff_s

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json"}
        key = os.environ.get(self.api_key_env) if self.api_key_env else None
        if key:
            headers["Authorization"] = f"Bearer {key}"
        return headers

    def generate(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        return self.generate_each(requests, lambda i, c: None)

    def generate_each(self, requests: Sequence[ChatRequest], on_done: OnDone) -> list[Completion]:
        if not requests:
            return []
        try:
            asyncio.get_running_loop()
            in_loop = True
        except RuntimeError:
            in_loop = False
        if not in_loop:  # outside the except block: a failure must not chain "no running event loop"
            return asyncio.run(self._generate(list(requests), on_done))
        # Called from inside an event loop (a notebook): run ours on a worker thread.
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(1) as pool:
            return pool.submit(asyncio.run, self._generate(list(requests), on_done)).result()

    def _error(self, what: str) -> OpenAIBackendError:
        return OpenAIBackendError(f"backend openai, model {self.model!r}, {self.url}: {what}")

    async def _generate(self, requests: list[ChatRequest], on_done: OnDone) -> list[Completion]:
        httpx = _httpx()
        sem = asyncio.Semaphore(self.max_concurrency)
        limits = httpx.Limits(max_connections=self.max_concurrency,
                              max_keepalive_connections=self.max_concurrency)
        async with httpx.AsyncClient(timeout=httpx.Timeout(self.timeout_s), limits=limits,
                                     headers=self._headers()) as client:

            async def one(i: int, req: ChatRequest) -> Completion:
                async with sem:
                    completion = await self._call(client, req)
                on_done(i, completion)
                return completion

            tasks = [asyncio.ensure_future(one(i, r)) for i, r in enumerate(requests)]
            try:
                return list(await asyncio.gather(*tasks))
            except BaseException:
                for t in tasks:
                    t.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
                raise

    async def _call(self, client, req: ChatRequest) -> Completion:
        httpx = _httpx()
        body = request_body(self.model, req, self.chat_template_kwargs, self.sampling)
        last = ""
        for attempt in range(self.max_retries + 1):
            delay = self.backoff_s * (2 ** attempt)
            try:
                resp = await client.post(self.url, json=body)
            except httpx.TimeoutException as exc:
                last = f"{type(exc).__name__} after {self.timeout_s}s{': ' + str(exc) if str(exc) else ''}"
            except httpx.TransportError as exc:
                last = f"{type(exc).__name__}: {exc or 'connection failed'}"
            else:
                if resp.status_code == 200:
                    try:
                        return self._parse(resp)
                    except _BadReply as exc:
                        last = f"malformed reply: {exc}"
                else:
                    msg = _server_message(resp)
                    if resp.status_code == 400 and _CONTEXT_OVERFLOW.search(msg):
                        # too long for the model: this request fails, not the whole batch
                        log.warning("%s refused a request as too long: %s", self.url, msg)
                        return Completion(text="", prompt_tokens=0, completion_tokens=0, finish_reason="error",
                                          error=f"context_overflow: server refused: {msg[:300]}")
                    if resp.status_code != 429 and resp.status_code < 500:
                        raise self._error(f"answered HTTP {resp.status_code}: {msg}")
                    last = f"HTTP {resp.status_code}: {msg}"
                retry_after = resp.headers.get("retry-after")
                if retry_after:
                    try:
                        delay = max(delay, float(retry_after))
                    except ValueError:
                        pass
            if attempt < self.max_retries:
                log.warning("%s failed (%s); retry %d/%d in %.1fs", self.url, last,
                            attempt + 1, self.max_retries, delay)
                await asyncio.sleep(delay)
        raise self._error(f"failed after {self.max_retries + 1} attempts; last cause: {last}")

    @staticmethod
    def _parse(resp) -> Completion:
        """A completion from a 200 reply, strictly: anything else is a ``_BadReply``."""
        try:
            data = resp.json()
        except (ValueError, UnicodeDecodeError) as exc:
            raise _BadReply(f"not JSON ({type(exc).__name__}: {exc}): {resp.text[:200]!r}") from None
        try:
            choice = data["choices"][0]
            text = choice["message"]["content"]
            usage = data.get("usage") or {}
            finish = choice.get("finish_reason") or "stop"
            tokens = [usage.get("prompt_tokens") or 0, usage.get("completion_tokens") or 0]
        except (KeyError, IndexError, TypeError, AttributeError):
            raise _BadReply(f"not a chat completion: {str(data)[:300]}") from None
        if text is None:
            refusal = choice["message"].get("refusal") if isinstance(choice["message"], dict) else None
            if not isinstance(refusal, str) or not refusal:
                # a glitch, not an answer: retried like any broken envelope, never stored
                raise _BadReply(f"null content and no refusal: {str(choice)[:300]}")
            text, finish = "", "refusal"  # a refusal is recorded as one (finish_reason "refusal")
        if not isinstance(text, str) or not isinstance(finish, str):
            raise _BadReply(f"content or finish_reason of the wrong type: {str(choice)[:300]}")
        if not all(type(t) is int and t >= 0 for t in tokens):
            raise _BadReply(f"usage token counts are not counts: {usage!r}"[:300])
        if finish not in ("stop", "length", "refusal"):
            # "tool_calls", "content_filter", "abort": not a clean stop, not truncation.
            finish = "stop" if finish == "tool_calls" else "error"
        return Completion(text=text, prompt_tokens=tokens[0], completion_tokens=tokens[1], finish_reason=finish)
