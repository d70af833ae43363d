"""The pipeline's own cost at scale: every method on 4 datasets x N questions with the
instant test-double backend (``backend: scripted``), so everything measured is orchestration,
stage code, Parquet and the call store — no model time.

    PYTHONPATH=workflow python benchmarks/bench_scale.py --n 10 150 500 [--lmad-iterations 10]
        [--judge-edit] [--data DIR] [--json out.json]

For each N it builds a fresh working directory, runs ``snakemake --cores 2`` (the default
target: predictions, judging, analysis, paper tables, figures, viewer, manifest) and prints
one JSON line and a table row: jobs (and jobs per rule), model calls (sum of the jobs'
``*.stats.json``), wall seconds, CPU seconds (user + sys of snakemake and every job it ran:
this process's children), CPU per job and CPU per call. With two or more N, the marginal
cost per call between consecutive N (constant when the cost is linear in N), the slope
between the smallest and largest N and the fixed cost per job it implies are printed too.
``--judge-edit`` then edits the judge prompt and reruns: jobs and wall of what a
judge-prompt edit costs (docs/backends.md "Call cache").

**Data.** ``--data DIR`` holds each benchmark's rows in its original schema
(``DIR/<dataset>.jsonl``): by default the shipped demo files; the figures in docs/benchmarks.md
used the real dev samples (82-150 per benchmark, not shipped: their licences). Each dataset's N
questions are synthesized by cycling through its rows; repeat r >= 1 of a row gets a new id
(``<id>~r<r>``) and is otherwise identical. The test double answers from a hash of the prompt
and seed, and the seeds depend on the question id, so repeats are distinct calls (they are not
served from the cache).
"""
from __future__ import annotations

import argparse
import compileall
import itertools
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
DATASETS = ["hotpotqa", "2wikimultihopqa", "musique", "strategyqa"]
ID_FIELD = {"hotpotqa": "_id", "2wikimultihopqa": "_id", "musique": "id", "strategyqa": "qid"}


def synthesize(data: Path, dataset: str, n: int, out: Path) -> None:
    """``n`` questions of ``dataset``: the rows of ``data``'s file in file order, repeated with new ids."""
    rows = [json.loads(line) for line in (data / f"{dataset}.jsonl").read_text().splitlines() if line.strip()]
    field = ID_FIELD[dataset]
    with out.open("w") as f:
        for i, row in zip(range(n), itertools.cycle(rows)):
            repeat = i // len(rows)
            if repeat:
                row = {**row, field: f"{row[field]}~r{repeat}"}
            f.write(json.dumps(row) + "\n")


def make_workdir(work: Path, n: int, lmad_iterations: int, debate_rounds: int, bootstrap: int,
                 all_methods: bool = False, data: Path = REPO / "data" / "demo") -> None:
    sys.path.insert(0, str(REPO / "workflow"))
    from lmad.registry import METHODS

    # the 14: every method at the neutral tone without a society, less the matched-budget
    # SC baseline (toned, society and sc-matched methods came later; --all-methods adds the first
    # and last: a society needs the selection stage, which this config does not turn on)
    methods = [m.name for m in METHODS.values() if m.society is None
               and (all_methods or m.tone == "neutral" and m.name != "sc-matched")]
    (work / "data").mkdir(parents=True)
    shutil.copytree(REPO / "config" / "prompts", work / "prompts")
    for d in DATASETS:
        synthesize(data, d, n, work / "data" / f"{d}.jsonl")
    config = {
        "seed": 0,
        "cache_dir": "cache/calls",
        "datasets": {d: {"source": "jsonl", "path": str(work / "data" / f"{d}.jsonl"), "n": None} for d in DATASETS},
        "models": {"scripted": {"backend": "scripted", "model": "scripted"}},
        "backbones": ["scripted"],
        "judge": {"model": "scripted", "max_tokens": 4},
        "methods": methods,
        "agents": {"temperatures": [0.1, 0.5, 0.9]},
        "solver": {"max_tokens": 64},
        "prompts": {p.stem: str(p) for p in sorted((work / "prompts").glob("*.txt"))},
        "lmad": {"iterations": lmad_iterations, "local_rounds": 1},
        "debate": {"rounds": debate_rounds},
        "analysis": {"bootstrap_resamples": bootstrap},
        "paper": {"bootstrap_resamples": bootstrap},
    }
    (work / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))


def snakemake(work: Path, cores: int, extra: list[str] = ()) -> dict:
    """One ``snakemake`` run in ``work``: wall, CPU of it and all its jobs, jobs per rule."""
    cmd = [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"), "--directory", str(work),
           "--configfile", str(work / "config.yaml"), "--cores", str(cores), *extra]
    env = {**os.environ, "LMAD_ALLOW_TEST_DOUBLE": "1"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"snakemake failed in {work} (rc {proc.returncode}):\n{proc.stderr[-6000:]}")
    # one "rule <name>:" / "localrule <name>:" header per job started
    rules = Counter(re.findall(r"^(?:local)?rule (\w+):$", proc.stderr, flags=re.MULTILINE))
    rules.pop("all", None)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall_s": round(wall, 2), "cpu_s": round(cpu, 2), "jobs": sum(rules.values()), "rules": dict(rules)}


def calls_of(work: Path) -> int:
    return sum(json.loads(p.read_text())["calls"] for p in (work / "logs").rglob("*.stats.json"))


def measure(root: Path, n: int, args) -> dict:
    work = root / f"n{n}"
    make_workdir(work, n, args.lmad_iterations, args.debate_rounds, args.bootstrap, args.all_methods, args.data)
    run = snakemake(work, args.cores, args.snakemake_args)
    calls = calls_of(work)
    out = {"n_per_dataset": n, "lmad_iterations": args.lmad_iterations, "debate_rounds": args.debate_rounds,
           "cores": args.cores, "jobs": run["jobs"], "calls": calls, "wall_s": run["wall_s"], "cpu_s": run["cpu_s"],
           "cpu_per_job_s": round(run["cpu_s"] / max(run["jobs"], 1), 3),
           "cpu_per_call_ms": round(1000 * run["cpu_s"] / max(calls, 1), 4), "rules": run["rules"]}
    noop = snakemake(work, args.cores)
    out["noop_rerun"] = {"jobs": noop["jobs"], "wall_s": noop["wall_s"]}
    if args.judge_edit:
        judge = work / "prompts" / "judge.txt"
        judge.write_text(judge.read_text() + "\nBe strict.\n")
        edit = snakemake(work, args.cores)
        out["judge_edit_rerun"] = {"jobs": edit["jobs"], "wall_s": edit["wall_s"], "cpu_s": edit["cpu_s"],
                                   "rules": edit["rules"]}
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return out


def cpu_model() -> str:
    try:
        return next(line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                    if line.startswith("model name"))
    except (OSError, StopIteration):
        return ""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, nargs="+", default=[10], help="questions per dataset (one run each)")
    ap.add_argument("--lmad-iterations", type=int, default=2, help="LMAD iterations L (the paper's setting: 10)")
    ap.add_argument("--debate-rounds", type=int, default=2)
    ap.add_argument("--bootstrap", type=int, default=200, help="bootstrap resamples of analysis and paper")
    ap.add_argument("--all-methods", action="store_true",
                    help="also the toned variants and sc-matched, not only the 14 neutral ones")
    ap.add_argument("--snakemake-args", nargs="*", default=[], metavar="ARG",
                    help="passed to the measured run, e.g. --snakemake-args=--scheduler=greedy")
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--judge-edit", action="store_true", help="also time a rerun after a judge-prompt edit")
    ap.add_argument("--data", type=Path, default=REPO / "data" / "demo",
                    help="folder of <dataset>.jsonl in the benchmarks' original schemas (default: the demo files)")
    ap.add_argument("--keep", help="keep the working directories under this folder")
    ap.add_argument("--json", help="also write the results here")
    args = ap.parse_args()

    # every job imports the pipeline: measure it as a user's Python runs it, from bytecode
    # (an environment with PYTHONDONTWRITEBYTECODE, like this project's sandbox, would otherwise
    # compile every edited module again in every job: 0.1-0.2 s each)
    compileall.compile_dir(str(REPO / "workflow"), quiet=1)
    root = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="bench_scale-"))
    root.mkdir(parents=True, exist_ok=True)
    results = []
    for n in args.n:
        results.append(measure(root, n, args))
        print(json.dumps(results[-1]), flush=True)
    summary = {"runs": results, "machine": {"cpus": os.cpu_count(), "cpu": cpu_model(), "python": sys.version.split()[0]}}
    # CPU per added call between consecutive N: constant when the cost is linear in N
    for prev, run in zip(results, results[1:]):
        if run["calls"] > prev["calls"]:
            added = (run["cpu_s"] - prev["cpu_s"]) / (run["calls"] - prev["calls"])
            run["marginal_cpu_per_call_ms"] = round(1000 * added, 4)
    lo, hi = min(results, key=lambda r: r["calls"]), max(results, key=lambda r: r["calls"])
    if hi["calls"] > lo["calls"]:
        per_call = (hi["cpu_s"] - lo["cpu_s"]) / (hi["calls"] - lo["calls"])
        summary["marginal_cpu_per_call_ms"] = round(1000 * per_call, 4)
        summary["fixed_cpu_per_job_s"] = round((lo["cpu_s"] - per_call * lo["calls"]) / lo["jobs"], 3)
    if not args.keep:
        shutil.rmtree(root, ignore_errors=True)

    print(f"\n{'N/dataset':>9} {'L':>3} {'jobs':>5} {'calls':>9} {'wall s':>8} {'CPU s':>8} {'CPU/job s':>10} "
          f"{'CPU/call ms':>12} {'marginal ms':>12} {'no-op s':>8} {'judge edit':>12}")
    for r in results:
        edit = r.get("judge_edit_rerun")
        edit_txt = f"{edit['jobs']} j {edit['wall_s']} s" if edit else ""
        print(f"{r['n_per_dataset']:>9} {r['lmad_iterations']:>3} {r['jobs']:>5} {r['calls']:>9,} {r['wall_s']:>8} "
              f"{r['cpu_s']:>8} {r['cpu_per_job_s']:>10} {r['cpu_per_call_ms']:>12} "
              f"{r.get('marginal_cpu_per_call_ms', ''):>12} {r['noop_rerun']['wall_s']:>8} "
              f"{edit_txt:>12}")
    if "marginal_cpu_per_call_ms" in summary:
        print(f"marginal CPU per call {summary['marginal_cpu_per_call_ms']} ms; "
              f"implied fixed CPU per job {summary['fixed_cpu_per_job_s']} s")
    print(json.dumps({k: v for k, v in summary.items() if k != "runs"}))
    if args.json:
        Path(args.json).write_text(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
