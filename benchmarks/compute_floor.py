"""The compute floor of a finished run, and the run's time as a multiple of it.

    python benchmarks/compute_floor.py --directory RUN [--wall S] [--cpu S] [--threads N]

Tokens: each model's ``computed_prompt_tokens`` and ``computed_completion_tokens`` from
``RUN/results/manifest.json`` (the calls the model actually ran: cache misses; prefill and decode).
Work per token: 2 x the model's parameter count (a multiply and an add per weight), the parameters
counted from the safetensors headers under ``RUN/resources/models/<name>/`` (no weights loaded).
Rate: a 2048 x 2048 matmul in torch at each dtype (best of a few runs on ``--threads``, default all
cores; a dtype too slow for that, as bf16 without CPU kernels, is timed at 256² and says so). The
floor is tokens x work / the fastest rate; attention and everything else that is not a weight
matmul is left out, so a real run cannot reach it. ``--wall`` and ``--cpu`` (seconds, e.g. from
``/usr/bin/time``) give the run's ratios; without ``--wall`` the span of the run's latest
Snakemake log is used. Prints JSON, then a table.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import struct
import time
from datetime import datetime
from pathlib import Path

DTYPES = ("float32", "bfloat16", "float16")
_BYTES = {"F32": 4, "F16": 2, "BF16": 2, "F64": 8, "I64": 8, "I32": 4, "I8": 1, "U8": 1, "BOOL": 1}


def parameters(folder: Path) -> int | None:
    """Sum of tensor sizes in every safetensors header under ``folder`` (None without one)."""
    files = sorted(folder.glob("*.safetensors"))
    if not files:
        return None
    total = 0
    for f in files:
        with f.open("rb") as fh:
            (size,) = struct.unpack("<Q", fh.read(8))
            header = json.loads(fh.read(size))
        for name, t in header.items():
            if name != "__metadata__":
                n = 1
                for d in t["shape"]:
                    n *= d
                total += n
    return total


def _best_matmul(torch, dtype, n: int, reps: int) -> float:
    """Seconds of the fastest of ``reps`` n x n matmuls at ``dtype`` (after a warm-up)."""
    a = torch.randn(n, n).to(dtype)
    b = torch.randn(n, n).to(dtype)
    a @ b  # warm-up: kernels chosen, buffers allocated
    best = float("inf")
    for _ in range(reps):
        start = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - start)
    return best


def matmul_rate(dtype: str, threads: int, n: int = 2048, reps: int = 5, budget_s: float = 2.0,
                probe: int = 256) -> tuple[float, int] | None:
    """(GFLOP/s, size) of an n x n matmul at ``dtype`` (best of ``reps``), None where torch cannot
    run it. A dtype the CPU has no kernels for runs ~400x slower (bf16 on an AVX2-only CPU: 0.3
    GFLOP/s, minutes per 2048² matmul), so a ``probe``² matmul is timed first and, where n would
    take over ``budget_s`` a run, its rate is the one reported (size ``probe``)."""
    import torch

    torch.set_num_threads(threads)
    try:
        small = _best_matmul(torch, getattr(torch, dtype), probe, reps)
        if small * (n / probe) ** 3 > budget_s:
            return 2 * probe ** 3 / small / 1e9, probe
        return 2 * n ** 3 / _best_matmul(torch, getattr(torch, dtype), n, reps) / 1e9, n
    except (RuntimeError, TypeError):
        return None


_STAMP = re.compile(r"^\[(\w{3} \w{3} +\d+ \d\d:\d\d:\d\d \d{4})\]", re.MULTILINE)


def log_span(run: Path) -> float | None:
    """Seconds between the first and last timestamp of the run's latest Snakemake log."""
    logs = sorted((run / ".snakemake" / "log").glob("*.snakemake.log"))
    if not logs:
        return None
    stamps = [datetime.strptime(" ".join(s.split()), "%a %b %d %H:%M:%S %Y") for s in _STAMP.findall(logs[-1].read_text())]
    return (stamps[-1] - stamps[0]).total_seconds() if len(stamps) > 1 else None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--directory", type=Path, default=Path("."))
    ap.add_argument("--wall", type=float, help="the run's wall time, seconds")
    ap.add_argument("--cpu", type=float, help="the run's CPU time (user + system), seconds")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    args = ap.parse_args()
    manifest = json.loads((args.directory / "results" / "manifest.json").read_text())
    probed = {d: matmul_rate(d, args.threads) for d in DTYPES}
    rates = {d: p[0] if p else None for d, p in probed.items()}
    fastest = max((d for d in DTYPES if rates[d]), key=lambda d: rates[d])
    models, floor_s = {}, 0.0
    for name, m in manifest.get("models", {}).items():
        prompt, completion = m.get("computed_prompt_tokens"), m.get("computed_completion_tokens")
        params = parameters(args.directory / "resources" / "models" / name)
        row = {"prompt_tokens": prompt, "completion_tokens": completion, "parameters": params}
        if None not in (prompt, completion, params):
            gflop = 2 * params * (prompt + completion) / 1e9
            row |= {"gflop": round(gflop, 1), "floor_s": round(gflop / rates[fastest], 1)}
            floor_s += gflop / rates[fastest]
        models[name] = row
    wall = args.wall if args.wall is not None else log_span(args.directory)
    out = {"threads": args.threads, "matmul_gflops": {d: round(r, 1) if r else None for d, r in rates.items()},
           "matmul_size": {d: p[1] if p else None for d, p in probed.items()},
           "fastest_dtype": fastest, "models": models, "floor_s": round(floor_s, 1),
           "wall_s": wall, "cpu_s": args.cpu,
           "wall_over_floor": round(wall / floor_s, 2) if wall and floor_s else None,
           "cpu_over_floor": round(args.cpu / floor_s, 2) if args.cpu and floor_s else None}
    print(json.dumps(out, indent=2))
    print("\nmatmul: " + ", ".join(f"{d} {p[0]:.1f} GFLOP/s ({p[1]}²)" if p else f"{d} n/a" for d, p in probed.items())
          + f" ({args.threads} threads); floor at {fastest}")
    print("| model | prompt tok | generated tok | parameters | GFLOP | floor (s) |\n|---|---|---|---|---|---|")
    for name, r in models.items():
        print(f"| {name} | {r['prompt_tokens']} | {r['completion_tokens']} | {r['parameters']} | {r.get('gflop', '–')} "
              f"| {r.get('floor_s', '–')} |")
    print(f"\nfloor {out['floor_s']} s; wall {wall} s ({out['wall_over_floor']}x); cpu {args.cpu} s "
          f"({out['cpu_over_floor']}x)")


if __name__ == "__main__":
    main()
