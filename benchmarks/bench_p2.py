"""P2: MAD through the pipeline vs the per-call sequential loop of the anchors' code.

    PYTHONPATH=workflow python benchmarks/bench_p2.py [--keep DIR]

Du et al.'s reference code (and most debate frameworks) loops question → round → agent and
sends one call at a time. This benchmark runs MAD (3 agents, 2 revision rounds, round 0 the
self-consistency proposals) on the 4 demo questions (config/config.yaml: one per benchmark)
with the embedded model (SmolLM2-135M-Instruct, transformers backend, 2 threads) both ways,
each with an empty call cache:

* **pipeline**: ``snakemake --cores 2`` building MAD's predictions of every dataset
  (prepare_data, generate proposals, every debate round, debate_predict: one batch per step
  over every question x agent, a model load per model job). Converting the model
  (rule convert_model) runs before the timer.
* **sequential**: one process, the model loaded once, every call issued alone
  (``cache_chunk: 1``), question after question, round after round, agent after agent — the
  same requests (prompts, seeds, temperatures, budgets) built by the same library code.

It prints both wall times, their ratio (sequential / pipeline), the calls each made, and
whether every response and final answer is the same (the backend's outputs are
batch-independent: per-request seeds).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "workflow"))
MODEL = "smollm2-135m"
METHOD = "mad"


def config_for(work: Path, test_double: bool) -> dict:
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    config["methods"] = [METHOD]
    if test_double:  # the logic alone, in seconds: the instant test double as the backbone
        config["models"] = {MODEL: {"backend": "scripted", "model": "scripted"}}
    config["cache_dir"] = "cache/calls"
    for spec in config["datasets"].values():
        spec["path"] = str(REPO / spec["path"])
    config["prompts"] = {k: str(REPO / v) for k, v in config["prompts"].items()}
    (work / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    return config


def snakemake(work: Path, *targets: str) -> float:
    cmd = [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"), "--directory", str(work),
           "--configfile", str(work / "config.yaml"), "--cores", "2", *targets]
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"snakemake failed (rc {proc.returncode}):\n{proc.stderr[-6000:]}")
    return wall


def pipeline(work: Path, config: dict) -> dict:
    from lmad import layout

    if "gguf" in config["models"][MODEL]:
        snakemake(work, f"resources/models/{MODEL}")  # the one-off model conversion, not timed
    targets = [layout.predictions(MODEL, d, METHOD) for d in config["datasets"]]
    wall = snakemake(work, *targets)
    calls = sum(json.loads(p.read_text())["misses"] for p in (work / "logs").rglob("*.stats.json"))
    return {"wall_s": round(wall, 2), "calls": calls}


def sequential(work: Path, config: dict) -> tuple[dict, dict]:
    """Question → round → agent, one call at a time, the model loaded once."""
    from lmad import layout
    from lmad.backends import open_backend
    from lmad.prompts import load_prompt
    from lmad.protocols.debate import debate_prediction_rows, protocol, run_round, setting_of
    from lmad.schemas import read_table
    from lmad.answers import reading_of
    from lmad.solver import derive_seed, sample_rows, solver_request

    spec = {"name": MODEL, **config["models"][MODEL], "cache_chunk": 1}
    if "gguf" in spec:
        spec["model"] = str(work / "resources" / "models" / MODEL)
    spec = {k: v for k, v in spec.items() if k not in ("gguf", "resources")}
    start = time.perf_counter()
    backend = open_backend(spec, work / "sequential-cache")
    setting, proto, seed = setting_of(METHOD, config), protocol(METHOD), config["seed"]
    solver = load_prompt(config["prompts"]["solver"])
    out = {}
    for d in config["datasets"]:
        for q in read_table("questions", work / layout.questions(d)).to_dicts():
            jobs = [{"qid": q["qid"], "stage": "proposals", "round": 0, "agent": a, "temperature": float(t),
                     "seed": derive_seed(seed, q["qid"], a),
                     "request": solver_request(solver, q, t, derive_seed(seed, q["qid"], a),
                                               config["solver"]["max_tokens"]),
                     "reading": reading_of(q)} for a, t in enumerate(config["agents"]["temperatures"])]
            proposals = sample_rows(backend, jobs)
            samples, steps, previous, state = [], [], (), None
            for t in range(setting.rounds + 1):
                last = t == setting.rounds
                roles = proto.prompt_roles(t, last, setting.manners, setting.shares_proposals)
                prompts = {r: load_prompt(config["prompts"][r]) for r in roles}
                result = run_round(proto, METHOD, t, last, [q], backend, prompts, setting.temperatures,
                                   setting.manners, seed, config["solver"]["max_tokens"], config["debate"]["max_tokens"],
                                   previous=previous, previous_state=state, proposals=proposals if t == 0 else None)
                samples += result.samples
                steps += result.steps
                previous, state = result.samples, result.state
            pred = debate_prediction_rows([q], METHOD, samples, steps, state)[0]
            out[(d, q["qid"])] = {"prediction": pred["prediction"],
                                  "responses": {(r["round"], r["agent"]): r["response"] for r in samples}}
    wall = time.perf_counter() - start
    return {"wall_s": round(wall, 2), "calls": backend.misses, "model_loads": int(backend.loaded)}, out


def pipeline_outputs(work: Path, config: dict) -> dict:
    from lmad import layout
    from lmad.schemas import read_table

    out = {}
    rounds = setting_rounds(config)
    for d in config["datasets"]:
        table = read_table("predictions", work / layout.predictions(MODEL, d, METHOD))
        preds = dict(zip(table["qid"], table["prediction"]))
        responses: dict = {}
        for t in range(rounds + 1):
            for r in read_table("samples", work / layout.debate_round(MODEL, d, METHOD, t)).to_dicts():
                responses.setdefault(r["qid"], {})[(r["round"], r["agent"])] = r["response"]
        for qid, prediction in preds.items():
            out[(d, qid)] = {"prediction": prediction, "responses": responses[qid]}
    return out


def setting_rounds(config: dict) -> int:
    from lmad.protocols.debate import setting_of

    return setting_of(METHOD, config).rounds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--keep", help="keep the working directory here")
    ap.add_argument("--test-double", action="store_true",
                    help="check the benchmark itself with the instant test double (LMAD_ALLOW_TEST_DOUBLE=1)")
    args = ap.parse_args()
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="bench_p2-"))
    work.mkdir(parents=True, exist_ok=True)
    config = config_for(work, args.test_double)
    piped = pipeline(work, config)
    print(json.dumps({"pipeline": piped}), flush=True)   # kept if the sequential half is cut short
    seq, seq_out = sequential(work, config)
    same = seq_out == pipeline_outputs(work, config)
    result = {"method": METHOD, "questions": len(seq_out), "pipeline": piped, "sequential": seq,
              "ratio_sequential_over_pipeline": round(seq["wall_s"] / piped["wall_s"], 2),
              "same_outputs": same, "cpus": os.cpu_count()}
    print(json.dumps(result))
    print(f"\n{'':<11} {'wall s':>7} {'calls':>6}\npipeline    {piped['wall_s']:>7} {piped['calls']:>6}\n"
          f"sequential  {seq['wall_s']:>7} {seq['calls']:>6}\nratio {result['ratio_sequential_over_pipeline']}; "
          f"same responses and answers: {same}")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
