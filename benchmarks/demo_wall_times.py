"""Demo wall time on each way of running the model: embedded transformers, vLLM offline
(one engine per model job) and workflow-managed served vLLM (one server for the run).

    PYTHONPATH=workflow python benchmarks/demo_wall_times.py [--modes transformers vllm served]

Each mode runs the README's demo (`snakemake --cores 2`, config/config.yaml) in a fresh
working directory with an empty call cache, and prints wall time, model loads per model
(from the manifest), calls, and for served mode the server's last reported prefix-cache
hit rate. The vLLM modes need an environment where `vllm` imports (docs/running.md "vLLM on CPU").
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
MODES = {"transformers": None, "vllm": False, "served": True}   # None: the demo's own model


def run(mode: str, root: Path) -> dict:
    work = root / mode
    work.mkdir()
    for folder in ("config", "data"):
        (work / folder).symlink_to(REPO / folder)
    args = []
    if MODES[mode] is not None:  # config/vllm-cpu.yaml, served or not
        (work / "override.yaml").write_text(yaml.safe_dump({"models": {"smollm2-135m-vllm": {"serve": MODES[mode]}}}))
        args = ["--configfile", "config/config.yaml", "config/vllm-cpu.yaml", "override.yaml"]
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"), "--cores", "2",
                           *args], cwd=work, capture_output=True,
                          text=True, env={**os.environ, "VLLM_CPU_OMP_THREADS_BIND": "auto"})
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        return {"mode": mode, "rc": proc.returncode, "wall_s": round(wall, 1), "tail": proc.stderr[-1500:]}
    manifest = json.loads((work / "results" / "manifest.json").read_text())
    stats = [json.loads(p.read_text()) for p in (work / "logs").rglob("*.stats.json")]
    out = {"mode": mode, "rc": 0, "wall_s": round(wall, 1), "jobs": proc.stderr.count("Finished jobid"),
           "model_loads": manifest["model_loads"], "calls": sum(s["calls"] for s in stats),
           "misses": sum(s["misses"] for s in stats)}
    server_log = work / "logs" / "serve" / "smollm2-135m-vllm.log"
    if server_log.exists():
        text = server_log.read_text(errors="replace")
        out["server_starts"] = text.count("serving: ")
        rates = re.findall(r"Prefix cache hit rate: ([\d.]+)%", text)
        out["prefix_cache_hit_rate_pct"] = float(rates[-1]) if rates else None
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--modes", nargs="+", default=list(MODES), choices=list(MODES))
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        results = [run(mode, Path(tmp)) for mode in args.modes]
    for r in results:
        print(json.dumps(r))
    print(f"{'mode':<13} {'wall s':>7} {'jobs':>5} {'loads':>6} {'calls':>6}  prefix-cache hits")
    for r in results:
        if r["rc"] == 0:
            print(f"{r['mode']:<13} {r['wall_s']:>7} {r['jobs']:>5} {sum(r['model_loads'].values()):>6} "
                  f"{r['calls']:>6}  {r.get('prefix_cache_hit_rate_pct', '')}")
        else:
            print(f"{r['mode']:<13} failed (rc {r['rc']}) after {r['wall_s']} s")


if __name__ == "__main__":
    main()
