"""P1 on vLLM: generated tokens/s of the `generate` stage vs the same prompts through raw
``LLM.chat``, in one process, one engine each (target: stage/raw >= 0.9).

    PYTHONPATH=workflow python benchmarks/p1_vllm.py --model /tmp/smol [--n 8] [--max-tokens 128]

``--model`` is a transformers-format folder (SmolLM2: ``resources/models/smollm2-135m``
after ``snakemake --cores 2 resources/models/smollm2-135m``). The stage's time excludes
its engine start (measured separately) and includes everything else it does: reading
and writing Parquet, building requests, the call store, answer extraction.
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
    ap.add_argument("--model", required=True)
    ap.add_argument("--dataset", default="hotpotqa")
    ap.add_argument("--n", type=int, default=8)
    ap.add_argument("--max-tokens", type=int, default=128)
    args = ap.parse_args()

    from lmad.backends import vllm_backend
    from lmad.data import load_dataset_spec
    from lmad.prompts import load_prompt
    from lmad.schemas import read_table, write_table
    from lmad.solver import derive_seed, solver_request
    from lmad.stages.generate import generate

    spec = {"name": "bench", "backend": "vllm", "model": args.model, "max_model_len": 4096}
    qs = load_dataset_spec({"name": args.dataset, "source": "jsonl", "n": args.n, "seed": 0,
                            "path": f"data/demo/{args.dataset}.jsonl"}, REPO)
    prompt = REPO / "config/prompts/solver.txt"
    solver = load_prompt(prompt)
    requests = [solver_request(solver, q, t, derive_seed(0, q["qid"], a), args.max_tokens)
                for q in qs for a, t in enumerate(TEMPERATURES)]

    # raw: the engine's own chat call on the same conversations and sampling parameters
    t0 = time.perf_counter()
    raw_backend = vllm_backend.VLLMBackend("bench", args.model, max_model_len=4096)
    raw_load = time.perf_counter() - t0
    t0 = time.perf_counter()
    outs = raw_backend.llm.chat([r.chat() for r in requests], [raw_backend.sampling_params(r) for r in requests],
                                use_tqdm=False)
    raw_s = time.perf_counter() - t0
    raw_tok = sum(len(o.outputs[0].token_ids) for o in outs)
    raw_backend.close()

    loads: list[float] = []
    original_init = vllm_backend.VLLMBackend.__init__

    def timed_init(self, *a, **kw):
        start = time.perf_counter()
        original_init(self, *a, **kw)
        loads.append(time.perf_counter() - start)

    vllm_backend.VLLMBackend.__init__ = timed_init
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
    same = [o.outputs[0].text for o in outs] == stage.sort("qid", "agent")["response"].to_list()
    figures = {"calls": len(requests), "raw_s": round(raw_s, 2), "raw_tok": raw_tok,
               "raw_tok_s": round(raw_tok / raw_s, 2), "raw_engine_start_s": round(raw_load, 1),
               "stage_s_without_engine_start": round(stage_s, 2), "stage_engine_start_s": round(sum(loads), 1),
               "stage_tok": stage_tok, "stage_tok_s": round(stage_tok / stage_s, 2),
               "p1": round((stage_tok / stage_s) / (raw_tok / raw_s), 3), "identical_texts": same}
    print(json.dumps(figures))
    print(f"P1 = {figures['p1']:.2f} (stage {figures['stage_tok_s']} tok/s vs raw {figures['raw_tok_s']} tok/s, "
          f"{len(requests)} calls, identical texts: {same})")


if __name__ == "__main__":
    main()
