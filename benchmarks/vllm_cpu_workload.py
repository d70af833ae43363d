"""Time VLLMBackend on a debate-shaped workload (CPU build or GPU).

Workload: ``--prompts`` distinct user messages of roughly ``--prompt-words`` words
(a synthetic multi-hop context plus a question), each sent by ``--agents`` agents at
temperatures 0.1/0.5/0.9 (same messages, so the agents share the whole prompt prefix),
``--max-tokens`` new tokens each, all in one ``generate`` batch.

Phases: engine start (import + ``vllm.LLM``), cold batch (first batch on a fresh
engine), warm batch (the same batch again: prefix cache full), warm-new batch (fresh
prompts on a warm engine: the steady state of a pipeline stage).

    PYTHONPATH=workflow .venv-vllm/bin/python benchmarks/vllm_cpu_workload.py --model resources/models/smollm2-135m
"""
from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "workflow"))

TEMPERATURES = (0.1, 0.5, 0.9)
NAMES = ["Aldren", "Borvik", "Calloway", "Dunmere", "Elsworth", "Fairholt", "Greyfield", "Hollin",
         "Ivarsen", "Jorund", "Kestrel", "Lindqvist", "Marrow", "Norwick", "Osgood", "Pellham"]
PLACES = ["Vesterby", "Kalmoor", "Ruthenfeld", "Stonebridge", "Taviston", "Ulverholm", "Wrenford", "Yarlow"]


def make_prompt(rng: random.Random, words: int) -> str:
    sents = []
    while sum(len(s.split()) for s in sents) < words:
        a, b = rng.sample(NAMES, 2)
        place = rng.choice(PLACES)
        year = rng.randint(1801, 1999)
        sents.append(rng.choice([
            f"{a} {b} was born in {place} in {year} and later studied law at the University of {place}.",
            f"The {place} Observatory was founded in {year} by the astronomer {a} {b}.",
            f"{a} {b} married the painter {rng.choice(NAMES)} {rng.choice(NAMES)} in {year}.",
            f"In {year} the town of {place} had about {rng.randint(2, 90)} thousand inhabitants.",
            f"{a} {b}'s best-known novel, The {rng.choice(PLACES)} Letters, appeared in {year}.",
        ]))
    a, b = rng.sample(NAMES, 2)
    question = f"Question: in which year was the observatory founded by the spouse of {a} {b}?"
    return ("Read the passages and answer the question. Think step by step, then give the "
            "answer on its own line.\n\n" + "\n".join(sents) + "\n\n" + question)


def batch(rng: random.Random, n_prompts: int, words: int, agents: int, max_tokens: int, seed0: int):
    from lmad.backends.base import ChatRequest

    reqs = []
    for p in range(n_prompts):
        text = make_prompt(rng, words)
        for a in range(agents):
            reqs.append(ChatRequest(messages=(("user", text),), temperature=TEMPERATURES[a % len(TEMPERATURES)],
                                    max_tokens=max_tokens, seed=seed0 + p * agents + a))
    return reqs


def timed(backend, reqs):
    t = time.perf_counter()
    out = backend.generate(reqs)
    dt = time.perf_counter() - t
    prompt = sum(c.prompt_tokens for c in out)
    gen = sum(c.completion_tokens for c in out)
    return {"seconds": round(dt, 2), "requests": len(reqs), "prompt_tokens": prompt,
            "mean_prompt_tokens": round(prompt / len(out), 1), "completion_tokens": gen,
            "completion_tok_per_s": round(gen / dt, 1), "total_tok_per_s": round((prompt + gen) / dt, 1),
            "finish_length": sum(c.finish_reason == "length" for c in out)}, out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=str(Path(__file__).resolve().parents[1] / "resources/models/smollm2-135m"),
                    help="a model folder or hub id (default: the demo model's conversion, rule convert_model)")
    ap.add_argument("--prompts", type=int, default=16)
    ap.add_argument("--agents", type=int, default=3)
    ap.add_argument("--prompt-words", type=int, default=160,
                    help="words of context; ~160 words is ~400 SmolLM2 tokens with the chat template")
    ap.add_argument("--max-tokens", type=int, default=128)
    ap.add_argument("--max-model-len", type=int, default=2048)
    ap.add_argument("--dtype", default="auto")
    ap.add_argument("--no-prefix-caching", action="store_true")
    ap.add_argument("--json", help="also write the figures to this file")
    args = ap.parse_args(argv)

    figures = {"config": vars(args)}
    t0 = time.perf_counter()
    import vllm  # noqa: F401  (timed separately: a large part of start-up on CPU)

    figures["import_vllm_s"] = round(time.perf_counter() - t0, 2)
    from lmad.backends.vllm_backend import VLLMBackend

    t = time.perf_counter()
    be = VLLMBackend("bench", args.model, dtype=args.dtype, max_model_len=args.max_model_len,
                     enable_prefix_caching=not args.no_prefix_caching)
    figures["engine_init_s"] = round(time.perf_counter() - t, 2)
    figures["engine_start_total_s"] = round(time.perf_counter() - t0, 2)
    figures["vllm_version"] = be.vllm_version
    figures["structured_outputs_api"] = be._structured.keyword
    figures["on_cpu"] = be.on_cpu

    rng = random.Random(0)
    first = batch(rng, args.prompts, args.prompt_words, args.agents, args.max_tokens, 0)
    fresh = batch(rng, args.prompts, args.prompt_words, args.agents, args.max_tokens, 10_000)
    try:
        figures["cold"], out1 = timed(be, first)
        figures["warm_same"], out2 = timed(be, first)
        figures["warm_new"], _ = timed(be, fresh)
    finally:
        be.close()
    figures["warm_same_identical_text"] = [a.text for a in out1] == [b.text for b in out2]
    figures["sample_output"] = out1[0].text[:200]

    for k, v in figures.items():
        print(f"{k:28s} {json.dumps(v)}")
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=1))
    return figures


if __name__ == "__main__":
    main()
