"""The call cache: ``CachedBackend`` serves a backend's calls from the persistent call store
(:mod:`lmad.backends.call_store`: its layout and guarantees) and stores each miss the moment it
finishes; ``Progress`` logs a long batch's progress.

The old one-JSON-file-per-call store (``<model>/<xx>/<key>.json``) is not read; a backend
that finds one says so and ``python -m lmad.backends.cache migrate <cache_dir>`` imports it.
"""
from __future__ import annotations

import json
import logging
import os
import re
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Callable, Sequence

from .base import Backend, ChatRequest, Completion, valid_unicode
from .call_store import (SEGMENT_SUFFIX, CallStore, checksum, decode_entry, encode_entry,  # noqa: F401 (the cache's API)
                         folder_name, read_sidecar)

log = logging.getLogger(__name__)


class Progress:
    """Done/total calls, tokens per second and an ETA in the job's log, every ``LMAD_PROGRESS_S``
    seconds (default 30) while a batch of model calls runs: a 12-hour generation job says how
    far it is. Cache hits are not counted (they cost nothing)."""

    def __init__(self, model_id: str, total: int):
        self.model_id, self.total, self.done, self.tokens = model_id, total, 0, 0
        self.every = float(os.environ.get("LMAD_PROGRESS_S", "30"))
        self.start = self.last = self.drawn = time.monotonic()
        self.bar = sys.stderr.isatty()   # a job run from a terminal also draws a bar there

    def step(self, tokens: int) -> None:
        self.done += 1
        self.tokens += tokens
        now = time.monotonic()
        if self.bar and (now - self.drawn >= 1 or self.done == self.total):
            self.drawn = now
            filled = 30 * self.done // max(self.total, 1)
            end = "\n" if self.done == self.total else ""
            sys.stderr.write(f"\r{self.model_id.split('|')[0]} [{'#' * filled}{'.' * (30 - filled)}] "
                             f"{self.done}/{self.total}{end}")
            sys.stderr.flush()
        if now - self.last < self.every and self.done < self.total:
            return
        if self.done == self.total and now - self.start < self.every:
            return  # a short batch: the stage's own summary line says enough
        self.last = now
        elapsed = max(now - self.start, 1e-9)
        eta = (self.total - self.done) * elapsed / self.done
        log.info("model %s: %d/%d calls, %.1f generated tokens/s, ETA %s", self.model_id, self.done, self.total,
                 self.tokens / elapsed, _clock(eta))


def _clock(seconds: float) -> str:
    seconds = int(round(seconds))
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


def _legacy_files(folder: Path) -> list[Path]:
    return sorted(folder.glob("[0-9a-f][0-9a-f]/*.json")) if folder.is_dir() else []


class CachedBackend(Backend):
    """``factory`` builds the real backend on the first cache miss, so a stage whose
    calls are all cached (or that has nothing to do) never loads a model."""

    def __init__(self, factory: Callable[[], Backend], model_id: str, root: str | os.PathLike,
                 chunk_size: int = 16, context_window: int | None = None, weights_id: str | None = None,
                 role_sampling: dict[str, tuple[tuple[str, float], ...]] | None = None):
        if chunk_size < 1:
            raise ValueError("cache chunk_size must be >= 1")
        self.factory = factory
        self._inner: Backend | None = None
        self.model_id = model_id
        # what the backend reports of itself: the weights part of the identity (backends.identity)
        self.weights_id = model_id if weights_id is None else weights_id
        self.root = Path(root) / folder_name(model_id)
        self.store = CallStore(self.root)
        self.chunk_size = chunk_size
        self.hits = 0
        self.misses = 0
        # tokens the model itself processed (cache misses): the job's compute, not its calls' size
        self.computed_prompt_tokens = 0
        self.computed_completion_tokens = 0
        self.probes = 0  # next-token log-probability reads (layer D), never stored
        self.sanitized = 0
        self.context_window = context_window  # config max_model_len; else the backend's own
        self.role_sampling = role_sampling or {}  # identity.role_sampling_of: what each role overrides
        self.shortened = 0  # requests sent with distractor paragraphs dropped
        self.overflow = 0  # requests failed before the call: too long even so
        old = Path(root) / folder_name(self.weights_id)
        if weights_id is not None and old != self.root and any(old.glob("*" + SEGMENT_SUFFIX)):
            # the identity had no backend settings then: those calls may come from another dtype,
            # quantization or sampling, so they are never served under the new one
            log.warning("%s holds calls stored before a model's backend settings were part of its cache identity; "
                        "they are not served (this run's identity is %s). Delete that folder once it is no "
                        "longer needed.", old, model_id)
        legacy = _legacy_files(self.root)
        if legacy:
            log.warning("%s holds %d calls in the old one-file-per-call layout, which is not read; import them "
                        "with: python -m lmad.backends.cache migrate %s", self.root, len(legacy), Path(root))

    def _with_role_sampling(self, req: ChatRequest) -> ChatRequest:
        override = self.role_sampling.get(req.role, ())
        return replace(req, sampling=override) if override != req.sampling else req

    def lookup(self, requests: Sequence[ChatRequest]) -> tuple[list[str], list[Completion | None]]:
        """Each request's key and its stored reply (None: not stored), computing nothing."""
        if self.role_sampling:
            requests = [self._with_role_sampling(r) for r in requests]
        keys = [r.key(self.model_id) for r in requests]
        self.store.refresh()  # calls other jobs finished since the last batch are hits too
        self.store.prefetch(keys)
        return keys, [self.store.get(k) for k in keys]

    def generate(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        if self.role_sampling:
            requests = [self._with_role_sampling(r) for r in requests]
        keys, out = self.lookup(requests)
        # identical requests inside one batch are computed once
        todo: dict[str, int] = {}
        for i, (k, c) in enumerate(zip(keys, out)):
            if c is None and k not in todo:
                todo[k] = i
        self.hits += sum(c is not None for c in out)
        pending = list(todo.items())
        progress = Progress(self.model_id, len(pending))
        for start in range(0, len(pending), self.chunk_size):
            chunk = pending[start : start + self.chunk_size]

            def done(j: int, completion: Completion, chunk=chunk) -> None:
                key, i = chunk[j]
                if out[i] is not None:
                    return
                progress.step(completion.completion_tokens)
                text, replaced = valid_unicode(completion.text)
                if replaced:
                    self.sanitized += 1
                    log.warning("model %s: reply to call %s held invalid Unicode (lone surrogates); replaced "
                                "by U+FFFD and recorded (sanitized=True)", self.model_id, key[:16])
                    completion = replace(completion, text=text, sanitized=True)
                if completion.finish_reason != "error":
                    self.store.put(key, completion)  # persisted the moment it returns
                    self.computed_prompt_tokens += completion.prompt_tokens
                    self.computed_completion_tokens += completion.completion_tokens
                out[i] = completion

            sendable, sent = [], []
            for j, (key, i) in enumerate(chunk):
                fitted, reason = self._fit(requests[i])
                if fitted is None:  # this request alone fails; the rest of the batch goes on
                    done(j, Completion(text="", prompt_tokens=0, completion_tokens=0, finish_reason="error",
                                       error=reason))
                else:
                    sendable.append(fitted)
                    sent.append(j)
            if sendable:
                results = self.inner.generate_each(sendable, lambda k, c: done(sent[k], c))
                for k, completion in enumerate(results):  # a backend that skipped a report
                    done(sent[k], completion)
            self.misses += len(chunk)
        for i, k in enumerate(keys):
            if out[i] is None:  # duplicate of a request computed in this batch
                out[i] = out[todo[k]]
                self.hits += 1
        return out  # type: ignore[return-value]

    def _fit(self, req: ChatRequest) -> tuple[ChatRequest | None, str]:
        """The request as it fits the context window (itself, or its first fallback that
        fits), or None and why not. Counting needs the model's tokenizer, so only misses are
        checked: a fully cached stage still loads nothing."""
        window = self.context_window or self.inner.context_window
        if not window:
            return req, ""
        need = self.inner.prompt_tokens(req)
        if need is None or need + req.max_tokens <= window:
            return req, ""
        n = 0
        for n, shorter in enumerate(req.fallbacks, 1):
            shorter_need = self.inner.prompt_tokens(shorter)
            if shorter_need is not None and shorter_need + shorter.max_tokens <= window:
                self.shortened += 1
                log.warning("model %s: prompt of %d tokens + max_tokens %d exceeds the context window %d; sent "
                            "with %d distractor paragraph(s) dropped (%d tokens)", self.model_id, need,
                            req.max_tokens, window, n, shorter_need)
                return replace(shorter, sampling=req.sampling), ""
        self.overflow += 1
        reason = (f"context_overflow: prompt of {need} tokens + max_tokens {req.max_tokens} exceeds the context "
                  f"window {window} of {self.model_id}"
                  + (f", also with all {n} distractor paragraphs dropped" if n else ""))
        log.warning("model %s: request failed before the call: %s", self.model_id, reason)
        return None, reason

    @property
    def inner(self) -> Backend:
        if self._inner is None:
            self._inner = self.factory()
            if self._inner.model_id != self.weights_id:
                raise RuntimeError(f"backend reports model id {self._inner.model_id!r}, "
                                   f"expected {self.weights_id!r}")
        return self._inner

    def next_token_logprobs(self, requests: Sequence[ChatRequest], options: Sequence[str]) -> list[list[float]]:
        """Not stored: one forward pass per request, deterministic, no sampling."""
        self.probes += len(requests)
        return self.inner.next_token_logprobs(requests, options)

    @property
    def loaded(self) -> bool:
        return self._inner is not None

    def stats(self) -> str:
        line = f"cache hits={self.hits} misses={self.misses} model_loaded={self.loaded}"
        extra = {"probes": self.probes, "invalid_entries": self.store.invalid, "sanitized": self.sanitized,
                 "shortened": self.shortened,
                 "context_overflow": self.overflow}
        return line + "".join(f" {k}={v}" for k, v in extra.items() if v)

    def close(self) -> None:
        self.store.close()
        if self._inner is not None:
            self._inner.close()


# ----------------------------------------------------------------------------- migration


def migrate(root: str | os.PathLike) -> dict[str, int]:
    """Import every ``<model>/<xx>/<key>.json`` of the old store under ``root`` into one
    segment per model, then delete the imported files. An old entry carried no key or
    checksum: its file name is its key, and one that is not a well-formed completion is
    skipped (and left in place) with a warning."""
    counts = {"imported": 0, "skipped": 0, "models": 0}
    for model_dir in sorted(p for p in Path(root).iterdir() if p.is_dir()):
        files = _legacy_files(model_dir)
        if not files:
            continue
        counts["models"] += 1
        store = CallStore(model_dir)
        imported = []
        for f in files:
            key = f.stem
            try:
                data = json.loads(f.read_text(encoding="utf-8"))
                if not (isinstance(data, dict) and set(data) == {"text", "prompt_tokens", "completion_tokens",
                                                                 "finish_reason"}):
                    raise ValueError(f"fields {sorted(data) if isinstance(data, dict) else type(data).__name__}")
                if not re.fullmatch(r"[0-9a-f]{64}", key):
                    raise ValueError("file name is not a call key")
                text, replaced = valid_unicode(data["text"]) if isinstance(data["text"], str) else (None, False)
                c = Completion(text=text, prompt_tokens=data["prompt_tokens"],
                               completion_tokens=data["completion_tokens"], finish_reason=data["finish_reason"],
                               sanitized=replaced)
                decode_entry(encode_entry(key, c), key)  # the same checks as a read
            except (OSError, ValueError, UnicodeDecodeError, TypeError) as exc:
                counts["skipped"] += 1
                log.warning("migrate: %s skipped (%s)", f, exc)
                continue
            store.put(key, c)
            imported.append(f)
        store.close()  # fsync before the originals go
        for f in imported:
            f.unlink()
        for sub in sorted({f.parent for f in imported}):
            try:
                sub.rmdir()
            except OSError:
                pass  # still holds skipped or temporary files
        counts["imported"] += len(imported)
    return counts


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m lmad.backends.cache",
                                     description="maintenance of the call store (docs/backends.md \"Call cache\")")
    sub = parser.add_subparsers(dest="command", required=True)
    m = sub.add_parser("migrate", help="import an old one-file-per-call cache_dir into segments")
    m.add_argument("cache_dir")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(message)s")
    if not Path(args.cache_dir).is_dir():
        parser.error(f"{args.cache_dir}: not a directory")
    counts = migrate(args.cache_dir)
    print(f"migrated {counts['imported']} calls of {counts['models']} models; skipped {counts['skipped']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
