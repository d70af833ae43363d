"""The embedded backend on multi-hop-shaped batches, with and without shared-prefix prefill.

    PYTHONPATH=workflow python benchmarks/transformers_prefill.py [--questions 6] [--dataset hotpotqa] [--data DIR]

Builds two stage batches from the questions of ``DIR/<dataset>.jsonl`` in the benchmark's
original schema (by default the shipped demo files; the figures in docs/benchmarks.md used the
real dev samples, which are not shipped) through the pipeline's own request builders: the
proposals (one solver prompt per question at the three agent temperatures) and a local debate
(the debater prompt of each of three agents, with a segment and positions of their own). Runs
each batch twice on SmolLM2-135M-Instruct (fp32, the model's local conversion under
``resources/models/``, made by rule ``convert_model``): once with prefixes shared, once with
every row prefilled whole. Prints wall time, prompt and generated tokens, the prefill token slots
filled against one padded pass, and whether every reply is the same both ways.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "workflow"))

from lmad.backends.shared_prefix import MIN_SHARED  # noqa: E402
from lmad.backends.transformers_backend import TransformersBackend  # noqa: E402
from lmad.data.loaders import load_dataset_spec  # noqa: E402
from lmad.prompts import load_prompt  # noqa: E402
from lmad.protocols.localized_debate.local_debate import debate_request  # noqa: E402
from lmad.solver import solver_request  # noqa: E402

TEMPERATURES = [0.1, 0.5, 0.9]


def batches(questions: list[dict]) -> dict[str, list]:
    solver, debater = load_prompt(REPO / "config/prompts/solver.txt"), load_prompt(REPO / "config/prompts/debater.txt")
    proposals = [solver_request(solver, q, t, seed, 128) for q in questions for seed, t in enumerate(TEMPERATURES)]
    debate = []
    for q in questions:
        first = " ".join(q["context"][0]["sentences"])[:200]
        for agent, t in enumerate(TEMPERATURES):
            others = {a: f"agent {a + 1}'s reading of the first passage" for a in range(3) if a != agent}
            debate.append(debate_request(debater, q, [], [first, f"So agent {agent + 1} answers."],
                                         "what the first passage says", f"position {agent + 1}", others, agent,
                                         t, agent, 64))
    return {"proposals": proposals, "debate": debate}


def run(backend: TransformersBackend, requests: list, share: bool):
    backend.min_shared = MIN_SHARED if share else 10**9
    backend.prefill_slots = [0, 0]
    start = time.perf_counter()
    out = backend.generate(requests)
    return time.perf_counter() - start, out, list(backend.prefill_slots)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dataset", default="hotpotqa")
    ap.add_argument("--questions", type=int, default=6)
    ap.add_argument("--data", type=Path, default=REPO / "data" / "demo", help="folder of <dataset>.jsonl")
    ap.add_argument("--model", default=str(REPO / "resources/models/smollm2-135m"))
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--modes", nargs="+", choices=["shared", "whole"], default=["shared", "whole"])
    args = ap.parse_args(argv)
    spec = {"name": args.dataset, "source": "jsonl", "path": str(args.data / f"{args.dataset}.jsonl"), "n": args.questions}
    questions = load_dataset_spec(spec, REPO)
    backend = TransformersBackend("smollm2-135m", args.model, batch_size=args.batch_size, threads=2)
    print(f"{args.dataset}, {len(questions)} questions x 3 agents, batch_size {args.batch_size}")
    print("| batch | prefill | wall s | prompt tok | gen tok | slots filled / padded | same replies |")
    print("|---|---|---|---|---|---|---|")
    for name, requests in batches(questions).items():
        results = {mode == "shared": run(backend, requests, mode == "shared") for mode in args.modes}
        texts = [[c.text for c in out] for _, out, _ in results.values()]
        same = all(t == texts[0] for t in texts)
        for share, (wall, out, (plain, filled)) in results.items():
            print(f"| {name} | {'shared' if share else 'whole'} | {wall:.1f} | {sum(c.prompt_tokens for c in out)} | "
                  f"{sum(c.completion_tokens for c in out)} | {filled} / {plain} | {same} |")


if __name__ == "__main__":
    main()
