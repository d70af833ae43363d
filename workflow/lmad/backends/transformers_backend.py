"""Embedded CPU backend: transformers, one process, structured outputs via xgrammar.

Decoding is our own loop over the model's forward pass rather than ``generate``:
on CPU a 135M model's decode step is memory-bound, so a batch of rows costs little
more than one row (measured on 2 cores: 118 ms/step for 1 row, 284 ms/step for 16),
but ``generate`` draws every row from one global RNG. Here each row samples from its
own ``torch.Generator`` seeded by its request, and carries its own temperature,
token budget, stop strings and grammar, so a request's output does not depend on the
settings of the rows it shares a batch with.

Prefill is the cost of a multi-hop prompt (~1,500 tokens of passages), and the agents of a
question share their passages: rows that begin alike have that prefix prefilled once
(``shared_prefix``), and the KV cache reserves room for the decode (``kv_cache``).
"""
from __future__ import annotations

import inspect
import json
import logging
import re
from typing import Sequence

from .base import Backend, ChatRequest, Completion, OnDone
from .cpu_dtype import resolve_dtype
from .model_files import model_identity, template_identity
from .shared_prefix import MIN_SHARED, grouped_order, prefill_plan

log = logging.getLogger(__name__)


def constraint_grammar(compiler, constraint: dict):
    """Compile a request's constraint to an xgrammar grammar over this tokenizer."""
    kind, value = next(iter(constraint.items()))
    if kind == "choice":
        return compiler.compile_regex("|".join(f"({re.escape(v)})" for v in value))
    if kind == "regex":
        return compiler.compile_regex(value)
    return compiler.compile_json_schema(json.dumps(value), any_whitespace=False)


class _Row:
    """Decoding state of one request in a batch."""

    def __init__(self, index: int, req: ChatRequest, prompt_len: int, matcher, torch):
        self.index = index  # the request's place in the call
        self.req = req
        self.prompt_len = prompt_len
        self.matcher = matcher
        self.tokens: list[int] = []  # text tokens (a final stop token is counted, not decoded)
        self.count = 0
        self.done = False
        self.finish = "length"
        self.gen = None
        if req.temperature > 0:
            self.gen = torch.Generator().manual_seed(req.seed)


class TransformersBackend(Backend):
    def __init__(self, name: str, model: str, batch_size: int = 16, threads: int | None = None,
                 dtype: str = "float32", revision: str | None = None, chat_template_kwargs: dict | None = None,
                 perturb: dict | None = None):
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        if threads:
            torch.set_num_threads(threads)
        self.torch = torch
        self.model_id = template_identity(model_identity(name, model, revision), chat_template_kwargs)
        self.chat_template_kwargs = dict(chat_template_kwargs or {})
        self.tok = AutoTokenizer.from_pretrained(model)
        self.dtype = resolve_dtype(dtype)
        self.model = AutoModelForCausalLM.from_pretrained(model, dtype=getattr(torch, self.dtype))
        self.model.eval()
        if self.dtype == "float32":  # a decode step's few rows as W @ xᵀ
            from .decode_linear import use_decode_linear

            use_decode_linear(self.model)
        if perturb:  # a seeded weight-perturbed agent (societies' neural-thicket pool; backends/perturb.py)
            from .perturb import perturb_suffix, perturb_weights

            perturb_weights(self.model, perturb["seed"], perturb["scale"])
            self.model_id += perturb_suffix(perturb)
        self.batch_size = batch_size
        self.vocab = self.model.config.vocab_size
        # positions the model was trained for: its context window (config max_model_len overrides)
        self.context_window = getattr(self.model.config, "max_position_embeddings", None)
        self.stop_ids = {t for t in (self.tok.eos_token_id, self.tok.pad_token_id) if t is not None}
        self.pad = self.tok.pad_token_id if self.tok.pad_token_id is not None else self.tok.eos_token_id
        self._compiler = None
        self.prefill_slots = [0, 0]  # token slots a padded prefill would fill, and those filled
        self.min_shared = MIN_SHARED  # rows sharing fewer leading tokens are prefilled whole
        # transformers 5 renames forward's past_key_values to cache (the old name goes in 5.40)
        self._cache_arg = "cache" if "cache" in inspect.signature(self.model.forward).parameters else "past_key_values"

    def _matcher(self, constraint: dict | None):
        if not constraint:
            return None
        import xgrammar as xgr

        if self._compiler is None:
            info = xgr.TokenizerInfo.from_huggingface(self.tok, vocab_size=self.vocab)
            self._compiler = xgr.GrammarCompiler(info)
        return xgr.GrammarMatcher(constraint_grammar(self._compiler, constraint))

    def prompt_tokens(self, req: ChatRequest) -> int:
        return len(self._prompt_ids(req))

    def _prompt_ids(self, req: ChatRequest) -> list[int]:
        return self.tok.apply_chat_template(req.chat(), add_generation_prompt=True, tokenize=True,
                                            return_dict=False, **self.chat_template_kwargs)

    def generate(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        return self.generate_each(requests, lambda i, c: None)

    def generate_each(self, requests: Sequence[ChatRequest], on_done: OnDone) -> list[Completion]:
        encoded = [self._prompt_ids(r) for r in requests]
        out: list[Completion | None] = [None] * len(requests)

        def done(i: int, c: Completion) -> None:
            out[i] = c
            on_done(i, c)  # stored as each row finishes

        # Similar lengths together (less padding), rows sharing a prefix next to each other.
        self._decode(requests, encoded, grouped_order(encoded, self.min_shared), done)
        return out  # type: ignore[return-value]

    def next_token_logprobs(self, requests: Sequence[ChatRequest], options: Sequence[str]) -> list[list[float]]:
        torch = self.torch
        option_ids = [self.tok.encode(o, add_special_tokens=False)[0] for o in options]
        out: list[list[float]] = []
        for start in range(0, len(requests), self.batch_size):
            input_ids, mask = self._left_padded([self._prompt_ids(r) for r in requests[start : start + self.batch_size]])
            with torch.inference_mode():
                logits = self.model(input_ids=input_ids, attention_mask=mask,
                                    position_ids=(mask.cumsum(-1) - 1).clamp(min=0), logits_to_keep=1).logits
            logprobs = torch.log_softmax(logits[:, -1, : self.vocab].float(), dim=-1)
            out += logprobs[:, option_ids].tolist()
        return out

    def _left_padded(self, ids: list[list[int]]):
        """Token ids and attention mask of rows padded on the left to one width."""
        torch = self.torch
        width = max(map(len, ids))
        return (torch.tensor([[self.pad] * (width - len(x)) + x for x in ids]),
                torch.tensor([[0] * (width - len(x)) + [1] * len(x) for x in ids]))

    def _forward(self, input_ids, mask, positions, cache):
        """Last-position logits of one forward pass that extends ``cache`` in place."""
        return self.model(input_ids=input_ids, attention_mask=mask, position_ids=positions, use_cache=True,
                          logits_to_keep=1, **{self._cache_arg: cache}).logits

    def _prefill(self, ids: list[list[int]], reserve: int):
        """The batch's prompts through the model: (last-token logits, KV cache, mask, positions);
        the cache keeps room for ``reserve`` more tokens per row.

        Rows that share a long prefix (``shared_prefix``) have it prefilled once, its KV cache
        copied to each of them, and only their own tokens prefilled after it; taken only where it
        fills fewer token slots than one padded pass (``prefill_plan``)."""
        from .kv_cache import ReservedCache

        torch = self.torch
        groups, plain, planned = prefill_plan(ids, self.min_shared)
        self.prefill_slots[0] += plain
        self.prefill_slots[1] += planned
        prefix_mask = torch.zeros(len(ids), 0, dtype=torch.long)
        own = [0] * len(ids)  # each row's tokens that come from its group's prefix
        if groups:
            heads = [(rows, length) for rows, length in groups if length]
            head_of = [0] * len(ids)
            for h, (rows, length) in enumerate(heads):
                for r in rows:
                    head_of[r], own[r] = h, length
            head_ids, head_mask = self._left_padded([ids[rows[0]][:length] for rows, length in heads])
            # room for the second pass's widest row too
            cache = ReservedCache(max(len(x) - k for x, k in zip(ids, own)) + reserve)
            self._forward(head_ids, head_mask, (head_mask.cumsum(-1) - 1).clamp(min=0), cache)
            cache.batch_select_indices(torch.tensor(head_of))  # rows of no group see it masked out
            prefix_mask = head_mask[head_of] * torch.tensor([[int(k > 0)] for k in own])
        else:
            cache = ReservedCache(reserve)
        input_ids, own_mask = self._left_padded([x[k:] for x, k in zip(ids, own)])
        mask = torch.cat([prefix_mask, own_mask], dim=1)
        # left padding: positions count real tokens only
        positions = (mask.cumsum(-1) - 1).clamp(min=0)[:, -input_ids.shape[1]:]
        return self._forward(input_ids, mask, positions, cache), cache, mask, positions

    def _decode(self, reqs: Sequence[ChatRequest], ids: list[list[int]], order: list[int], done: OnDone) -> None:
        """Decode requests ``order`` in a batch of up to ``batch_size`` rows, calling ``done`` as
        each finishes. A batch lasts as long as its longest row, and a decode step costs nearly as
        much for a few rows as for a full batch, so rows that finish leave the batch and the next
        requests in ``order`` take their places (continuous batching): they are prefilled apart
        and their KV cache joins the batch's."""
        torch = self.torch
        queue = list(order)
        bitmask = None
        if any(r.constraint for r in reqs):
            import xgrammar as xgr

            bitmask = xgr.allocate_token_bitmask(min(self.batch_size, len(reqs)), self.vocab)
        with torch.inference_mode():
            live: list[_Row] = []  # the rows in the KV cache, finished ones too until a compaction
            nxt: list[int] = []  # each live row's next input token
            cache = mask = positions = None
            while True:
                keep = [k for k, r in enumerate(live) if not r.done]
                free = self.batch_size - len(keep)  # rows join once a quarter of the batch is free
                joining = queue[:free] if 4 * free >= self.batch_size or not keep else []
                if not keep and not joining:
                    return
                # finished rows leave the batch (a copy of the KV cache) once they are a quarter
                # of it, or when rows join
                if not keep:
                    live, nxt = [], []  # the batch's cache goes; the joining rows start one
                elif joining or 4 * (len(live) - len(keep)) >= len(live):
                    cache.batch_select_indices(torch.tensor(keep))
                    mask, positions = mask[keep], positions[keep]
                    nxt, live = [nxt[k] for k in keep], [live[k] for k in keep]
                if joining:
                    del queue[: len(joining)]
                    rows = [_Row(i, reqs[i], len(ids[i]), self._matcher(reqs[i].constraint), torch) for i in joining]
                    reserve = max(r.req.max_tokens - r.count for r in live + rows) + 1
                    logits, new_cache, new_mask, new_positions = self._prefill([ids[i] for i in joining], reserve)
                    picked = self._picked(rows, logits[:, -1, : self.vocab].float(), bitmask, done)
                    if live:
                        cache.extend_rows(new_cache, reserve)
                        width = max(mask.shape[1], new_mask.shape[1])
                        mask = torch.cat([torch.nn.functional.pad(m, (width - m.shape[1], 0)) for m in (mask, new_mask)])
                        positions = torch.cat([positions[:, -1:], new_positions[:, -1:]])
                    else:
                        cache, mask, positions = new_cache, new_mask, new_positions
                    nxt, live = nxt + picked, live + rows
                    if all(r.done for r in live):
                        continue
                mask = torch.cat([mask, torch.ones(len(live), 1, dtype=mask.dtype)], dim=1)
                positions = positions[:, -1:] + 1
                logits = self._forward(torch.tensor(nxt).unsqueeze(1), mask, positions, cache)
                active = [k for k, r in enumerate(live) if not r.done]
                picked = self._picked([live[k] for k in active], logits[active, -1, : self.vocab].float(), bitmask, done)
                nxt = [self.pad] * len(live)  # a finished row still in the batch is fed padding
                for k, t in zip(active, picked):
                    nxt[k] = t

    def _picked(self, rows: list[_Row], logits, bitmask, done: OnDone) -> list[int]:
        """``_pick``, then ``done`` for each row it finished."""
        picked = self._pick(rows, logits, bitmask)
        for r in rows:
            if r.done:
                done(r.index, self._completion(r))
        return picked

    def _pick(self, rows: list[_Row], logits, bitmask) -> list[int]:
        """One next token per live row (row i of ``logits``)."""
        torch = self.torch
        if bitmask is not None:
            import xgrammar as xgr

            constrained = [i for i, r in enumerate(rows) if r.matcher and not r.done]
            for i in constrained:
                rows[i].matcher.fill_next_token_bitmask(bitmask, i)
            if constrained:
                xgr.apply_token_bitmask_inplace(logits, bitmask, indices=constrained)
        picked = []
        for i, r in enumerate(rows):
            if r.gen is None:
                t = int(logits[i].argmax())
            else:
                probs = torch.softmax(logits[i] / r.req.temperature, dim=-1)
                t = int(torch.multinomial(probs, 1, generator=r.gen))
            picked.append(t)
            self._advance(r, t)
        return picked

    def _advance(self, r: _Row, token: int) -> None:
        r.count += 1
        if r.matcher is not None:
            r.matcher.accept_token(token)
            if r.matcher.is_terminated():
                r.done, r.finish = True, "stop"
                return
        if token in self.stop_ids:
            r.done, r.finish = True, "stop"
            return
        r.tokens.append(token)
        if r.req.stop:
            text = self.tok.decode(r.tokens[-32:], skip_special_tokens=True)
            if any(s in text for s in r.req.stop):
                r.done, r.finish = True, "stop"
                return
        if len(r.tokens) >= r.req.max_tokens:
            r.done = True

    def _completion(self, r: _Row) -> Completion:
        text = self.tok.decode(r.tokens, skip_special_tokens=True)
        for s in r.req.stop:
            if s in text:
                text = text[: text.index(s)]
        return Completion(text=text, prompt_tokens=r.prompt_len, completion_tokens=r.count,
                          finish_reason=r.finish)
