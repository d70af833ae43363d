"""The model seam: one batched ``generate`` that every backend implements.

Batching, caching and token accounting wrap it from outside (see ``cache.py``), so a
new backend is one short file.
"""
from __future__ import annotations

import hashlib
import json
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

ROLES = ("system", "user", "assistant")
#: who makes a call (``ChatRequest.role``): the names a model's ``role_sampling`` overrides
#: (config ``models.<name>.role_sampling``, whose enum lmad.config_schema fills in from this list)
CALL_ROLES = ("solver", "debater", "extractor", "localizer", "resolver", "relation_check", "judge",
              "finalizer", "jury", "rubric", "self_report", "pushback", "probe")
# json.dumps(..., sort_keys=True, ensure_ascii=False) without building an encoder per call
_key_json = json.JSONEncoder(sort_keys=True, ensure_ascii=False).encode
_LINE_MEMO_CHARS = 8_000_000  # what the memo may hold (lines + escapes): tens of MB at most
_escaped_lines: dict[str, str] = {}  # line -> its JSON string escape (no quotes)
_memo_chars = 0


def _json_text(text: str) -> str:
    """``json.dumps(text, ensure_ascii=False)``, escaped line by line with each line's escape
    kept: a question's passage lines recur in every prompt about it, and escaping them was
    a third of a debate call's cost. JSON escapes character by character and a newline is
    written as the two characters \\n, so the joined result is the same string."""
    global _memo_chars
    memo = _escaped_lines
    parts = []
    for line in text.split("\n"):
        escaped = memo.get(line)
        if escaped is None:
            escaped = json.encoder.encode_basestring(line)[1:-1]
            _memo_chars += len(line) + len(escaped)
            if _memo_chars > _LINE_MEMO_CHARS:  # start over rather than track what is oldest
                memo.clear()
                _memo_chars = len(line) + len(escaped)
            memo[line] = escaped
        parts.append(escaped)
    return '"' + "\\n".join(parts) + '"'


_constraint_memo: dict[int, tuple[Any, str]] = {}  # id -> (the constraint's value, kept alive; its JSON)


def _constraint_json(constraint: dict) -> str:
    """A constraint's part of the key (``{kind: value}``, one kind), the value's JSON memoized by
    identity: a stage builds one JSON schema per shape (lmad.protocols.localized_debate.premises)
    and thousands of calls share it. A value is never changed once in a request (ChatRequest is
    frozen)."""
    (kind, value), = constraint.items()
    hit = _constraint_memo.get(id(value))
    if hit is None or hit[0] is not value:
        if len(_constraint_memo) > 4096:
            _constraint_memo.clear()
        hit = _constraint_memo[id(value)] = (value, _key_json(value))
    return f'{{{_key_json(kind)}: {hit[1]}}}'


def _scalar_json(value: Any) -> str:
    """A number's JSON as ``json.dumps`` writes it: ints by ``str``, finite floats by ``repr``
    (what the encoder itself calls); anything else (a bool, NaN) through the encoder."""
    kind = type(value)
    if kind is int or kind is float and value - value == 0:  # inf - inf and NaN are NaN
        return int.__repr__(value) if kind is int else float.__repr__(value)
    return _key_json(value)


_short_memo: dict[Any, str] = {}  # model ids and stop tuples: a handful per run


def _text_json(text: str) -> str:
    hit = _short_memo.get(text)
    if hit is None or type(text) is not str:
        hit = _key_json(text)
        if type(text) is str and len(_short_memo) < 1024:
            _short_memo[text] = hit
    return hit


def _stop_json(stop: tuple) -> str:
    """Stop strings' JSON list, memoized when they are strings (1 == 1.0 == True as dict keys,
    not as JSON)."""
    plain = type(stop) is tuple and all(type(s) is str for s in stop)
    hit = _short_memo.get(stop) if plain else None
    if hit is None:
        hit = _key_json(stop)
        if plain and len(_short_memo) < 1024:
            _short_memo[stop] = hit
    return hit


@dataclass(frozen=True)
class ChatRequest:
    """One chat call. Everything that changes the output is a field here."""

    messages: tuple[tuple[str, str], ...]
    temperature: float = 0.0
    max_tokens: int = 256
    seed: int = 0
    stop: tuple[str, ...] = ()
    # At most one structured-output constraint: {"choice": [...]}, {"regex": "..."}
    # or {"json": <JSON schema>}. Backends enforce it while decoding.
    constraint: dict[str, Any] | None = field(default=None, hash=False)
    # Shorter renderings of the same request, tried in order when this one does not fit the
    # model's context window (distractor paragraphs dropped; ``solver.solver_request``). Not
    # part of the cache key: the same request, window and tokenizer pick the same one.
    fallbacks: Iterable["ChatRequest"] = field(default=(), hash=False, compare=False, repr=False)
    # Who makes the call (``CALL_ROLES``): a tag, not in the key. The call cache turns the
    # model's override for the role into ``sampling`` (``cache.CachedBackend``).
    role: str = field(default="solver", compare=False)
    # Sampling settings over the model's own, sorted (name, value) pairs; in the key when set.
    sampling: tuple[tuple[str, float], ...] = ()

    def __post_init__(self):
        for role, content in self.messages:
            if role not in ROLES:
                raise ValueError(f"unknown chat role {role!r}")
            if not isinstance(content, str):
                raise TypeError(f"message content must be str, got {type(content).__name__}")
        if self.constraint is not None and len(self.constraint) != 1:
            raise ValueError(f"constraint must have exactly one kind, got {sorted(self.constraint)}")
        if self.constraint is not None and next(iter(self.constraint)) not in ("choice", "regex", "json"):
            raise ValueError(f"unknown constraint kind {next(iter(self.constraint))!r}")
        if self.role not in CALL_ROLES:
            raise ValueError(f"unknown call role {self.role!r}; one of {', '.join(CALL_ROLES)}")

    def key(self, model_id: str) -> str:
        """Cache key: model identity + messages + sampling params + seed + constraint.

        The JSON is byte for byte what ``{"model": model_id, **dataclasses.asdict(self)}``
        (less ``fallbacks`` and ``role``, and less ``sampling`` when it is empty) gives, so every
        stored call still hits; built directly, as
        ``asdict`` deep-copies every message (two thirds of the cost; paid once per call),
        and the messages' text escaped by :func:`_json_text`. Roles are ``ROLES`` words, which
        JSON writes as they are.
        A field added to the request must be added here (``tests/test_cache.py`` pins both)."""
        constraint = "null" if self.constraint is None else _constraint_json(self.constraint)
        messages = ", ".join(f'["{role}", {_json_text(content)}]' for role, content in self.messages)
        sampling = f'"sampling": {_key_json(self.sampling)}, ' if self.sampling else ""
        # the fields in sort_keys order: constraint, max_tokens, messages, model, [sampling,] seed, stop, temperature
        blob = (f'{{"constraint": {constraint}, "max_tokens": {_scalar_json(self.max_tokens)}, "messages": [{messages}], '
                f'"model": {_text_json(model_id)}, {sampling}"seed": {_scalar_json(self.seed)}, '
                f'"stop": {_stop_json(self.stop)}, "temperature": {_scalar_json(self.temperature)}}}')
        return hashlib.sha256(blob.encode()).hexdigest()

    def chat(self) -> list[dict[str, str]]:
        return [{"role": r, "content": c} for r, c in self.messages]


@dataclass(frozen=True)
class Completion:
    text: str
    prompt_tokens: int
    completion_tokens: int
    finish_reason: str  # "stop" | "length" | "error"
    cached: bool = False
    # the reply held text that is not valid Unicode (lone surrogates), replaced by U+FFFD
    sanitized: bool = False
    # why a call failed (finish_reason "error"), e.g. a prompt longer than the context window
    error: str = ""


#: called with (index in the batch, completion) as each request of a batch finishes
OnDone = Callable[[int, Completion], None]


class BackendError(RuntimeError):
    """The one error a backend raises for a call it could not complete (transport, server,
    reply shape) after its bounded retries; the message names backend, model, URL and cause."""


def valid_unicode(text: str) -> tuple[str, bool]:
    """``text`` with lone surrogates replaced by U+FFFD (they cannot be written as UTF-8:
    not to the call store, not to Parquet), and whether anything was replaced."""
    try:
        text.encode("utf-8")
        return text, False
    except UnicodeEncodeError:
        # surrogatepass keeps valid pairs whole; the decode replaces the lone ones
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace"), True


class Backend(ABC):
    """A model behind a batched chat interface."""

    #: name + weights hash or revision; part of every cache key
    model_id: str
    #: tokens the model can attend to (prompt + completion); None where unknown
    context_window: int | None = None

    def prompt_tokens(self, req: ChatRequest) -> int | None:
        """The request's prompt length in the model's tokens, chat template applied; None
        where the backend cannot count before the call (then the server is the judge)."""
        return None

    @abstractmethod
    def generate(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        """Return one completion per request, in order."""

    def generate_each(self, requests: Sequence[ChatRequest], on_done: OnDone) -> list[Completion]:
        """``generate``, reporting each completion as soon as it exists. Backends that finish
        requests one by one (or in decode batches) override it, so the call store persists a
        call the moment it returns, whatever the cache's chunk size."""
        results = self.generate(requests)
        for i, c in enumerate(results):
            on_done(i, c)
        return results

    def next_token_logprobs(self, requests: Sequence[ChatRequest], options: Sequence[str]) -> list[list[float]]:
        """Per request, the log-probability of each option's first token as the reply's first
        token (chat template applied, nothing sampled): layer D's stance probe. A backend that
        cannot read its own next-token distribution raises NotImplementedError."""
        raise NotImplementedError(f"the {type(self).__name__} exposes no next-token log-probabilities")

    def close(self) -> None:  # pragma: no cover - overridden where resources exist
        pass
