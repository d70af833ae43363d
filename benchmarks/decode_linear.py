"""A decode step's linear layers: torch's ``linear`` (x @ Wᵀ) against ``W @ xᵀ``, by row count.

    PYTHONPATH=workflow python benchmarks/decode_linear.py [--rows 1 2 4 8 12 16 24 32] [--threads 2]

One step's products of SmolLM2-135M (30 layers of q, k, v, o, gate, up, down, then the 49,152-row
output head), random fp32 weights, 30 layers' worth so they stream from memory as in the model
rather than sit in a cache. For each row count M, the step's product time both ways (median of 5,
the two interleaved and run twice) and the weights' read rate, and whether the two give the same
bits and whether each gives the same bits as a batch of 2,000 containing the same rows (a reply's
dependence on its batch). Then JSON. ``backends/decode_linear.py`` takes ``W @ xᵀ`` up to its
``MAX_ROWS``; docs/benchmarks.md has the figures that chose it.
"""
from __future__ import annotations

import argparse
import json
import statistics
import time

LAYER = [(576, 576), (192, 576), (192, 576), (576, 576), (1536, 576), (1536, 576), (576, 1536)]  # (out, in)
LAYERS, VOCAB, HIDDEN = 30, 49152, 576


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, nargs="+", default=[1, 2, 3, 4, 6, 8, 12, 16, 24, 32])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()

    import torch

    from lmad.backends.decode_linear import swapped_linear

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    weights = [torch.randn(o, i) for _ in range(LAYERS) for o, i in LAYER] + [torch.randn(VOCAB, HIDDEN)]
    nbytes = sum(w.numel() * w.element_size() for w in weights)
    ways = {"linear": lambda x, w: torch.nn.functional.linear(x, w),
            "W@xT": swapped_linear}

    def step_ms(way, m: int) -> float:
        inputs = {k: torch.randn(m, k) for k in {i for _, i in LAYER}}
        f = ways[way]
        f(inputs[HIDDEN], weights[0])
        times = []
        for _ in range(args.repeats):
            start = time.perf_counter()
            for w in weights:
                f(inputs[w.shape[1]], w)
            times.append(time.perf_counter() - start)
        return statistics.median(times) * 1e3

    # bits: each shape, rows 0..M of a batch of 2,000 against the same rows computed alone
    probe = {(o, i): (torch.randn(o, i), torch.randn(2000, i)) for o, i in set(LAYER) | {(VOCAB, HIDDEN)}}
    whole = {s: torch.nn.functional.linear(x, w) for s, (w, x) in probe.items()}

    def same_bits(m: int) -> dict:
        out = {"ways_equal": True, "linear_batch_free": True, "W@xT_batch_free": True}
        for s, (w, x) in probe.items():
            a, b = ways["linear"](x[:m], w), ways["W@xT"](x[:m], w)
            out["ways_equal"] &= torch.equal(a, b)
            out["linear_batch_free"] &= torch.equal(a, whole[s][:m])
            out["W@xT_batch_free"] &= torch.equal(b, whole[s][:m])
        return out

    rows = []
    with torch.inference_mode():
        for m in args.rows:
            t = {way: [] for way in ways}
            for _ in range(2):
                for way in ways:
                    t[way].append(step_ms(way, m))
            best = {way: min(v) for way, v in t.items()}
            row = {"rows": m, **{f"{way}_ms": v for way, v in t.items()},
                   "ratio": best["W@xT"] / best["linear"], **same_bits(m)}
            rows.append(row)
            print(f"M={m:3d}  linear {' '.join(f'{v:6.1f}' for v in t['linear'])} ms "
                  f"({nbytes / best['linear'] / 1e6:4.1f} GB/s)  W@xT {' '.join(f'{v:6.1f}' for v in t['W@xT'])} ms "
                  f"({nbytes / best['W@xT'] / 1e6:4.1f} GB/s)  ratio {row['ratio']:.2f}  same bits: "
                  f"{'yes' if row['ways_equal'] else 'no'}; batch-free: linear "
                  f"{'yes' if row['linear_batch_free'] else 'no'}, W@xT {'yes' if row['W@xT_batch_free'] else 'no'}",
                  flush=True)
    print(json.dumps({"torch": torch.__version__, "threads": args.threads, "weights_bytes": nbytes, "rows": rows}))


if __name__ == "__main__":
    main()
