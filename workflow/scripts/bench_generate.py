"""Benchmark: generated tokens/s of the `generate` stage vs the raw backend, same batch.

    python workflow/scripts/bench_generate.py [--dataset hotpotqa] [--n 4] [--max-tokens 128] [--batch-size 16]

Needs the converted demo model (`snakemake --cores 2 resources/models/smollm2-135m`).
The stage run uses an empty temporary cache, so it issues every call; the difference to
the raw run is the stage's own overhead (reading/writing Parquet, answer extraction,
cache writes, model load).
"""
from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from lmad.backends import make_backend
from lmad.data import load_dataset_spec
from lmad.prompts import load_prompt
from lmad.schemas import read_table, write_table
from lmad.solver import derive_seed, solver_request
from lmad.stages.generate import generate

REPO = Path(__file__).resolve().parents[2]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dataset", default="hotpotqa")
    ap.add_argument("--n", type=int, default=4)
    ap.add_argument("--max-tokens", type=int, default=128)
    ap.add_argument("--model", default=str(REPO / "resources/models/smollm2-135m"))
    ap.add_argument("--batch-size", type=int, default=16)
    args = ap.parse_args()
    temps = [0.1, 0.5, 0.9]
    spec = {"name": "smollm2-135m", "backend": "transformers", "model": args.model, "threads": 2,
            "batch_size": args.batch_size}
    qs = load_dataset_spec({"name": args.dataset, "source": "jsonl", "n": args.n, "seed": 0,
                            "path": f"data/demo/{args.dataset}.jsonl"}, REPO)
    prompt = REPO / "config/prompts/solver.txt"
    solver = load_prompt(prompt)
    requests = [solver_request(solver, q, t, derive_seed(0, q["qid"], a), args.max_tokens)
                for q in qs for a, t in enumerate(temps)]

    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        backend = make_backend(spec)
        load_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        raw = backend.generate(requests)
        raw_s = time.perf_counter() - t0
        del backend

        questions = Path(tmp) / "q.parquet"
        write_table("questions", qs, questions)
        t0 = time.perf_counter()
        generate(questions=[str(questions)], prompt=str(prompt), samples=[f"{tmp}/s.parquet"], model=spec,
                 cache_dir=f"{tmp}/cache", stage="proposals", temperatures=temps, max_tokens=args.max_tokens,
                 seed=0, provenance={})
        stage_s = time.perf_counter() - t0
        stage = read_table("samples", f"{tmp}/s.parquet")

    raw_tok = sum(c.completion_tokens for c in raw)
    stage_tok = int(stage["completion_tokens"].sum())
    prompt_tok = sum(c.prompt_tokens for c in raw)
    same = [c.text for c in raw] == stage.sort("qid", "agent")["response"].to_list()
    print(f"batch: {len(requests)} calls ({args.n} {args.dataset} questions x 3 agents), "
          f"{prompt_tok} prompt tokens, max_tokens={args.max_tokens}")
    print(f"model load: {load_s:.1f} s")
    print(f"raw backend:    {raw_s:7.1f} s  {raw_tok:5d} generated tokens  {raw_tok / raw_s:6.2f} tok/s")
    print(f"generate stage: {stage_s:7.1f} s  {stage_tok:5d} generated tokens  {stage_tok / stage_s:6.2f} tok/s "
          f"(includes model load)")
    print(f"stage overhead beyond load: {stage_s - load_s - raw_s:+.1f} s; identical texts: {same}")


if __name__ == "__main__":
    main()
