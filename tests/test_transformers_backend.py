"""The embedded backend's own decode loop on the real model: a request's output does not
depend on the batch it shares (seeds, temperatures, budgets and grammars are per row), nor on
whether a prefix it shares with other rows was prefilled once for all of them."""
import json

import pytest

from conftest import SMOLLM2
from lmad.backends.base import ChatRequest
from lmad.backends.transformers_backend import TransformersBackend

pytestmark = pytest.mark.model


def ask(text, **kw):
    return ChatRequest(messages=(("user", text),), **kw)


def test_batched_decoding_equals_one_by_one(smollm2_dir):
    backend = TransformersBackend("smollm2-135m", str(smollm2_dir), batch_size=1, threads=2)
    requests = [
        ask("Where was Jane Austen born? Answer briefly.", max_tokens=24),
        ask("Name a river in Germany.", temperature=0.9, seed=1, max_tokens=20),
        ask("Name a river in Germany.", temperature=0.9, seed=2, max_tokens=20),
        ask("Is Paris in France? Reply yes or no.", max_tokens=4, constraint={"choice": ["yes", "no"]}),
        ask("List two facts about the Rhine as JSON.", temperature=0.5, seed=3, max_tokens=40,
            constraint={"json": {"type": "object", "properties": {"claims": {
                "type": "array", "maxItems": 2, "items": {"type": "string", "maxLength": 40}}},
                "required": ["claims"]}}),
        ask("Count from one to ten in words.", max_tokens=12, stop=("five",)),
    ]
    alone = backend.generate(requests)
    backend.batch_size = 16
    together = backend.generate(requests)
    assert [c.text for c in together] == [c.text for c in alone]
    assert [c.completion_tokens for c in together] == [c.completion_tokens for c in alone]
    for req, c in zip(requests, together):
        assert 0 < c.completion_tokens <= req.max_tokens and c.prompt_tokens > 0
    assert together[3].text in ("yes", "no") and together[3].finish_reason == "stop"
    if together[4].finish_reason == "stop":  # a completed grammar is valid JSON
        assert len(json.loads(together[4].text)["claims"]) <= 2
    assert "five" not in together[5].text
    # seeded sampled rows repeat exactly in another batch
    assert backend.generate(requests[1:3]) == together[1:3]
    # two rows at a time: each finished row's place is taken by the next request, prefilled apart
    # and joined to the batch's KV cache; each call is reported once, as it finishes
    backend.batch_size = 2
    reported = []
    joined = backend.generate_each(requests, lambda i, c: reported.append((i, c)))
    assert [c.text for c in joined] == [c.text for c in alone]
    assert [c.completion_tokens for c in joined] == [c.completion_tokens for c in alone]
    assert sorted(i for i, _ in reported) == list(range(len(requests)))
    assert all(joined[i] == c for i, c in reported)


def test_rows_sharing_a_prefix_decode_as_they_do_alone(smollm2_dir):
    # the proposals of a question are one prompt at three temperatures; its debaters share the passages
    backend = TransformersBackend("smollm2-135m", str(smollm2_dir), batch_size=1, threads=2)
    passages = " ".join(f"Passage {i}: river R{i} flows through Town{i} and is {7 * i} km long." for i in range(8))

    def ask_with(question, system="You answer questions from passages.", **kw):
        return ChatRequest(messages=(("system", system), ("user", f"{passages}\nQuestion: {question}")), **kw)

    requests = [ask_with("Which town does R3 flow through?", temperature=0.7, seed=s, max_tokens=8) for s in range(2)]
    requests += [ask_with("How long is R2?", max_tokens=8), ask_with("How long is R5?", max_tokens=8),
                 ask_with("Is R1 longer than R2? Reply yes or no.", max_tokens=2, constraint={"choice": ["yes", "no"]}),
                 ask_with("How long is R2?", system="Another system prompt.", max_tokens=8)]
    alone = backend.generate(requests)
    assert backend.prefill_slots[0] == backend.prefill_slots[1]  # one row a batch: nothing to share
    backend.batch_size, backend.prefill_slots = 16, [0, 0]
    together = backend.generate(requests)
    assert [(c.text, c.completion_tokens, c.prompt_tokens) for c in together] == \
        [(c.text, c.completion_tokens, c.prompt_tokens) for c in alone]
    plain, filled = backend.prefill_slots
    assert filled < plain / 2  # five rows share the passages: their prefill is done about once


def test_the_converted_folder_holds_the_weights_transformers_reads_from_the_gguf(smollm2_dir):
    """The conversion reads the GGUF once and builds its model without initializing it
    (lmad.backends.model_files): the weights are still those of a plain GGUF load."""
    import gguf
    import torch
    from transformers import AutoModelForCausalLM

    from lmad.backends.model_files import _gguf_read_once, packaged_gguf

    path = packaged_gguf(SMOLLM2["gguf"]["package"], SMOLLM2["gguf"]["file"])
    direct = AutoModelForCausalLM.from_pretrained(path.parent, gguf_file=path.name, dtype=torch.float32).state_dict()
    converted = AutoModelForCausalLM.from_pretrained(smollm2_dir, dtype=torch.float32).state_dict()
    assert direct.keys() == converted.keys()
    assert [k for k in direct if not torch.equal(direct[k], converted[k])] == []
    with _gguf_read_once():
        assert gguf.GGUFReader(path) is gguf.GGUFReader(path)
        assert gguf.get_tensor_name_map(gguf.MODEL_ARCH.LLAMA, 30) is gguf.get_tensor_name_map(gguf.MODEL_ARCH.LLAMA, 30)
    assert gguf.GGUFReader is gguf.gguf_reader.GGUFReader  # put back as it was
