"""Deterministic test double. For tests only: a user config that names it is rejected.

With a ``responder`` (a callable in unit tests; in a workflow test, config
``models.<name>.responder: "module:function"``, importable in the jobs), every request
is answered by it. Without
one, it plays a plausible solver: the answer is the title of one of the numbered
passages, chosen from a hash of the prompt, seed and temperature, so agents at
different temperatures sometimes disagree. Constrained requests get a value that
satisfies the constraint.

``judge_mode`` (model config) scripts the correct/incorrect judge: ``hash`` (default, a
value picked by hash), ``oracle`` (correct iff the prediction contains a reference answer
after normalization: a perfect judge on the known-answer battery), ``always_correct``,
``always_incorrect`` or ``garbage`` (a reply outside the allowed choices, e.g. a judge
that ignores its constraint).
"""
from __future__ import annotations

import hashlib
import importlib
import itertools
import math
import re
from typing import Callable, Sequence

from .base import Backend, ChatRequest, Completion, OnDone
from .model_files import template_identity

Responder = Callable[[ChatRequest], str]


_TITLE = re.compile(r"^\[\d+\] ([^:\n]+):", flags=re.MULTILINE)


def _digest(*parts) -> int:
    return int(hashlib.sha256("\x00".join(map(str, parts)).encode()).hexdigest()[:12], 16)


def _prompt_digest(req: ChatRequest) -> int:
    """``_digest(prompt, req.seed, req.temperature)`` of the messages joined by newlines, hashed
    message by message instead of joined first (two copies of the prompt fewer)."""
    h = hashlib.sha256()
    for i, (_, content) in enumerate(req.messages):
        if i:
            h.update(b"\n")
        h.update(content.encode())
    h.update(f"\x00{req.seed}\x00{req.temperature}".encode())
    return int(h.hexdigest()[:12], 16)


def _first_titles(req: ChatRequest, n: int) -> list[str]:
    """The first ``n`` passage titles of the prompt (its messages joined by newlines), scanned
    message by message: a title line never spans two messages."""
    found = (m.group(1) for _, content in req.messages for m in _TITLE.finditer(content))
    return list(itertools.islice(found, n))


def instance_of(schema: dict, pick: int) -> object:
    """A small JSON value valid under a (simple) JSON schema."""
    if "enum" in schema:
        return schema["enum"][pick % len(schema["enum"])]
    kind = schema.get("type")
    if kind == "object":
        return {k: instance_of(v, pick + i) for i, (k, v) in enumerate(schema.get("properties", {}).items())}
    if kind == "array":
        if schema.get("maxItems") == 0:
            return []
        n = max(schema.get("minItems", 1), 1)
        positional = schema.get("prefixItems", [])  # one schema per position, then "items"
        return [instance_of(positional[i] if i < len(positional) else schema.get("items", {"type": "string"}),
                            pick + i) for i in range(n)]
    if kind == "integer":
        return int(schema.get("minimum", 1))
    if kind == "boolean":
        return True
    return f"claim {pick % 7}"


JUDGE_MODES = ("hash", "oracle", "always_correct", "always_incorrect", "garbage")


def _oracle_verdict(prompt: str) -> str:
    from ..answers.text import normalize_hotpot

    ref = re.search(r"^Reference answer: (.*)$", prompt, flags=re.MULTILINE)
    pred = re.search(r"^Predicted answer: (.*)$", prompt, flags=re.MULTILINE)
    if not ref or not pred:
        return "incorrect"
    gold, _, also = ref.group(1).partition(" (also accepted: ")
    golds = [gold, *(also.rstrip(")").split(", ") if also else [])]
    said = f" {normalize_hotpot(pred.group(1))} "
    return "correct" if any(f" {normalize_hotpot(g)} " in said for g in golds if normalize_hotpot(g)) else "incorrect"


def scripted_identity(name: str, judge_mode: str = "hash") -> str:
    return f"{name}@test-double" + ("" if judge_mode == "hash" else f"+judge-{judge_mode}")


def spec_identity(spec: dict) -> str:
    """A test-double model entry's weights identity (lmad.backend_registry ``identity``)."""
    return scripted_identity(spec.get("name", "scripted"), spec.get("judge_mode", "hash"))


class ScriptedBackend(Backend):
    def __init__(self, name: str = "scripted", responder: Responder | str | None = None, judge_mode: str = "hash",
                 chat_template_kwargs: dict | None = None, perturb: dict | None = None, **_):
        if judge_mode not in JUDGE_MODES:
            raise ValueError(f"scripted backend: judge_mode must be one of {JUDGE_MODES}, got {judge_mode!r}")
        from .perturb import perturb_suffix  # a "perturbed" double answers alike under its own identity

        self.model_id = template_identity(scripted_identity(name, judge_mode), chat_template_kwargs) + perturb_suffix(
            perturb)
        self.chat_template_kwargs = dict(chat_template_kwargs or {})  # what a real backend would render with
        if isinstance(responder, str):
            module, _, attr = responder.partition(":")
            responder = getattr(importlib.import_module(module), attr)
        self.responder = responder
        self.judge_mode = judge_mode
        self.calls: list[ChatRequest] = []
        self._words: dict[int, tuple[ChatRequest, int]] = {}  # id -> (request, words): prompt_tokens' memo
        self._lines: dict[str, int] = {}  # line -> words (_line_words)

    def _default(self, req: ChatRequest) -> str:
        pick = _prompt_digest(req)
        if req.constraint:
            import json

            kind, value = next(iter(req.constraint.items()))
            if kind == "choice" and set(value) == {"correct", "incorrect"} and self.judge_mode != "hash":
                prompt = "\n".join(c for _, c in req.messages)
                return {"oracle": _oracle_verdict(prompt), "always_correct": "correct",
                        "always_incorrect": "incorrect", "garbage": "maybe"}[self.judge_mode]
            if kind == "choice":
                return value[pick % len(value)]
            if kind == "json":
                return json.dumps(instance_of(value, pick))
            raise ValueError("the test double does not synthesize regex constraints")
        titles = _first_titles(req, 2) or ["unknown"]  # all it picks from: the scan stops there
        # low temperatures agree on the first passage; higher ones wander
        choice = titles[0] if req.temperature <= 0.3 else titles[pick % min(2, len(titles))]
        return f"The passages mention {titles[0]}.\nSo the answer follows from them.\nAnswer: {choice}"

    def prompt_tokens(self, req: ChatRequest) -> int:
        """Words stand in for tokens (what its completions report as prompt_tokens). Counted
        once per request: the cache's context-window check asks before ``generate`` does."""
        seen = self._words.get(id(req))
        if seen is not None and seen[0] is req:
            return seen[1]
        if len(self._words) > 4096:
            self._words.clear()
        words = sum(self._line_words(c) for _, c in req.messages)
        self._words[id(req)] = (req, words)
        return words

    def _line_words(self, text: str) -> int:
        """``len(text.split())``, line by line with each line's count kept: a question's passage
        lines recur in every prompt about it (a newline separates words, so the sum is exact)."""
        memo = self._lines
        if len(memo) > 65536:
            memo.clear()
        total = 0
        for line in text.split("\n"):
            n = memo.get(line)
            if n is None:
                n = memo[line] = len(line.split())
            total += n
        return total

    def generate(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        out = []
        for req in requests:
            self.calls.append(req)
            text = self.responder(req) if self.responder else self._default(req)
            words = len(text.split())
            out.append(Completion(text=text, prompt_tokens=self.prompt_tokens(req),
                                  completion_tokens=min(words, req.max_tokens), finish_reason="stop"))
        return out

    def next_token_logprobs(self, requests: Sequence[ChatRequest], options: Sequence[str]) -> list[list[float]]:
        """A fixed distribution per prompt (hash-picked weights over the options, holding 50-99 %
        of the mass), or ``responder``'s when it has a ``logprobs(request, options)`` attribute."""
        out = []
        for req in requests:
            self.calls.append(req)
            custom = getattr(self.responder, "logprobs", None)
            if custom is not None:
                out.append(list(custom(req, options)))
                continue
            pick = _digest("\n".join(c for _, c in req.messages), "logprobs")
            weights = [1 + (pick >> (4 * k)) % 16 for k in range(len(options))]
            mass = 0.5 + (pick % 50) / 100
            out.append([math.log(mass * w / sum(weights)) for w in weights])
        return out

    def generate_each(self, requests: Sequence[ChatRequest], on_done: OnDone) -> list[Completion]:
        out = []
        for i, req in enumerate(requests):  # one by one, like a server: each reported as it returns
            out.extend(self.generate([req]))  # through generate, which tests may wrap
            on_done(i, out[-1])
        return out
