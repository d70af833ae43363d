"""P1: generated tokens/s of the `generate` stage vs the same prompts sent to the raw
engine, in one process, one engine each (target: stage/raw >= 0.9).

    PYTHONPATH=workflow python benchmarks/p1_stage_vs_raw.py --backend transformers --model resources/models/smollm2-135m
    PYTHONPATH=workflow .venv-vllm/bin/python benchmarks/p1_stage_vs_raw.py --backend vllm --model resources/models/smollm2-135m

``--model`` is a transformers-format folder (SmolLM2: ``snakemake --cores 2
resources/models/smollm2-135m`` converts the packaged GGUF). Raw is the engine's own
batch call (``LLM.chat`` for vLLM, the backend's batched decode for transformers) on the
solver requests of ``--n`` demo questions × 3 agents. The stage's time excludes its
engine start (measured apart) and includes everything else it does: Parquet in and out,
building requests, the call store, answer extraction. Prints JSON, then one line.
"""
from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TEMPERATURES = [0.1, 0.5, 0.9]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--backend", choices=["transformers", "vllm"], default="transformers")
    ap.add_argument("--model", required=True)
    ap.add_argument("--dataset", default="hotpotqa")
    ap.add_argument("--n", type=int, default=4)
    ap.add_argument("--max-tokens", type=int, default=128)
    args = ap.parse_args()

    from lmad.backends import make_backend
    from lmad.data import load_dataset_spec
    from lmad.prompts import load_prompt
    from lmad.schemas import read_table, write_table
    from lmad.solver import derive_seed, solver_request
    from lmad.stages.generate import generate

    spec = {"name": "bench", "backend": args.backend, "model": args.model}
    spec |= {"max_model_len": 4096} if args.backend == "vllm" else {"threads": 2, "batch_size": 16}
    qs = load_dataset_spec({"name": args.dataset, "source": "jsonl", "n": args.n, "seed": 0,
                            "path": f"data/demo/{args.dataset}.jsonl"}, REPO)
    prompt = REPO / "config/prompts/solver.txt"
    solver = load_prompt(prompt)
    requests = [solver_request(solver, q, t, derive_seed(0, q["qid"], a), args.max_tokens)
                for q in qs for a, t in enumerate(TEMPERATURES)]

    t0 = time.perf_counter()
    raw_backend = make_backend(spec)
    raw_load = time.perf_counter() - t0
    t0 = time.perf_counter()
    if args.backend == "vllm":  # the engine's own call, not the backend's wrapper
        outs = raw_backend.llm.chat([r.chat() for r in requests], [raw_backend.sampling_params(r) for r in requests],
                                    use_tqdm=False)
        raw_texts, raw_tok = [o.outputs[0].text for o in outs], sum(len(o.outputs[0].token_ids) for o in outs)
    else:
        outs = raw_backend.generate(requests)
        raw_texts, raw_tok = [c.text for c in outs], sum(c.completion_tokens for c in outs)
    raw_s = time.perf_counter() - t0
    raw_backend.close()

    # the stage builds its own engine on its first cache miss: time that apart
    import lmad.backends as backends

    loads: list[float] = []
    original = backends.make_backend

    def timed_make(s):
        start = time.perf_counter()
        built = original(s)
        loads.append(time.perf_counter() - start)
        return built

    backends.make_backend = timed_make
    with tempfile.TemporaryDirectory() as tmp:
        questions = Path(tmp) / "q.parquet"
        write_table("questions", qs, questions)
        t0 = time.perf_counter()
        generate(questions=[str(questions)], prompt=str(prompt), samples=[f"{tmp}/s.parquet"], model=spec,
                 cache_dir=f"{tmp}/cache", stage="proposals", temperatures=TEMPERATURES, max_tokens=args.max_tokens,
                 seed=0, provenance={})
        stage_total = time.perf_counter() - t0
        stage = read_table("samples", f"{tmp}/s.parquet")
    stage_s = stage_total - sum(loads)
    stage_tok = int(stage["completion_tokens"].sum())
    same = raw_texts == stage.sort("qid", "agent")["response"].to_list()
    figures = {"backend": args.backend, "calls": len(requests), "max_tokens": args.max_tokens,
               "raw_s": round(raw_s, 2), "raw_tok": raw_tok, "raw_tok_s": round(raw_tok / raw_s, 2),
               "raw_engine_start_s": round(raw_load, 1), "stage_s_without_engine_start": round(stage_s, 2),
               "stage_engine_start_s": round(sum(loads), 1), "stage_tok": stage_tok,
               "stage_tok_s": round(stage_tok / stage_s, 2), "p1": round((stage_tok / stage_s) / (raw_tok / raw_s), 3),
               "identical_texts": same}
    print(json.dumps(figures))
    print(f"P1 ({args.backend}) = {figures['p1']:.2f}: stage {figures['stage_tok_s']} tok/s vs raw "
          f"{figures['raw_tok_s']} tok/s, {len(requests)} calls, identical texts: {same}")


if __name__ == "__main__":
    main()
