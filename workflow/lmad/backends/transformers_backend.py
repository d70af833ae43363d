"""Embedded CPU backend: transformers, one process, structured outputs via xgrammar."""
from __future__ import annotations

import json
import logging
import re
from typing import Sequence

from .base import Backend, ChatRequest, Completion
from .model_files import model_identity

log = logging.getLogger(__name__)


def constraint_grammar(compiler, constraint: dict):
    """Compile a request's constraint to an xgrammar grammar over this tokenizer."""
    kind, value = next(iter(constraint.items()))
    if kind == "choice":
        return compiler.compile_regex("|".join(f"({re.escape(v)})" for v in value))
    if kind == "regex":
        return compiler.compile_regex(value)
    return compiler.compile_json_schema(json.dumps(value), any_whitespace=False)


class TransformersBackend(Backend):
    def __init__(self, name: str, model: str, batch_size: int = 1, threads: int | None = None,
                 dtype: str = "float32", revision: str | None = None):
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        if threads:
            torch.set_num_threads(threads)
        self.torch = torch
        self.model_id = model_identity(name, model, revision)
        self.tok = AutoTokenizer.from_pretrained(model)
        self.tok.padding_side = "left"
        if self.tok.pad_token is None:
            self.tok.pad_token = self.tok.eos_token
        self.model = AutoModelForCausalLM.from_pretrained(model, dtype=getattr(torch, dtype))
        self.model.eval()
        self.batch_size = batch_size
        self._compiler = None

    def _grammar(self, constraint: dict):
        if self._compiler is None:
            import xgrammar as xgr

            info = xgr.TokenizerInfo.from_huggingface(self.tok, vocab_size=self.model.config.vocab_size)
            self._compiler = xgr.GrammarCompiler(info)
        return constraint_grammar(self._compiler, constraint)

    def _prompt_ids(self, req: ChatRequest) -> list[int]:
        return self.tok.apply_chat_template(req.chat(), add_generation_prompt=True, tokenize=True,
                                            return_dict=False)

    def generate(self, requests: Sequence[ChatRequest]) -> list[Completion]:
        encoded = [self._prompt_ids(r) for r in requests]
        # Similar lengths together: less padding when batch_size > 1.
        order = sorted(range(len(requests)), key=lambda i: len(encoded[i]))
        out: list[Completion | None] = [None] * len(requests)
        for start in range(0, len(order), self.batch_size):
            idx = order[start : start + self.batch_size]
            for i, c in zip(idx, self._generate_batch([requests[i] for i in idx], [encoded[i] for i in idx])):
                out[i] = c
        return out  # type: ignore[return-value]

    def _generate_batch(self, reqs: list[ChatRequest], ids: list[list[int]]) -> list[Completion]:
        torch = self.torch
        from transformers import LogitsProcessorList

        width = max(map(len, ids))
        pad = self.tok.pad_token_id
        input_ids = torch.tensor([[pad] * (width - len(x)) + x for x in ids])
        attention = torch.tensor([[0] * (width - len(x)) + [1] * len(x) for x in ids])
        head = reqs[0]
        # A batch shares sampling settings; per-request seeds are exact with batch_size 1.
        torch.manual_seed(head.seed)
        processors = LogitsProcessorList()
        if any(r.constraint for r in reqs):
            from xgrammar.contrib.hf import LogitsProcessor

            grammars = [self._grammar(r.constraint or {"regex": r"[\s\S]*"}) for r in reqs]
            processors.append(LogitsProcessor(grammars))
        sample = head.temperature > 0
        with torch.inference_mode():
            gen = self.model.generate(
                input_ids=input_ids, attention_mask=attention,
                max_new_tokens=max(r.max_tokens for r in reqs),
                do_sample=sample, temperature=head.temperature if sample else None,
                top_p=None, top_k=None, pad_token_id=pad,
                logits_processor=processors,
                stop_strings=list(head.stop) or None, tokenizer=self.tok if head.stop else None,
            )
        results = []
        for row, req, prompt in zip(gen[:, width:], reqs, ids):
            tokens = row.tolist()
            eos = [k for k, t in enumerate(tokens) if t in (self.tok.eos_token_id, pad)]
            n = eos[0] if eos else len(tokens)
            text = self.tok.decode(tokens[:n], skip_special_tokens=True)
            finish = "stop" if eos or n < req.max_tokens else "length"
            for s in req.stop:
                if s in text:
                    text, finish = text[: text.index(s)], "stop"
            results.append(Completion(text=text, prompt_tokens=len(prompt),
                                      completion_tokens=min(n + bool(eos), req.max_tokens),
                                      finish_reason=finish))
        return results
