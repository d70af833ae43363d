"""Does a row of a Linear layer come out the same whatever rows it is computed with?

    python benchmarks/bf16_rows.py [--dtypes float32 bfloat16] [--threads 2]

For each of SmolLM2-135M's projection shapes, random weights and 2,000 random rows: the rows of
one batch of 2,000 against the same rows computed in a batch of M (M from 1 to 1,999, from row 0
and from row 7) and as a (4, 50, K) input. Prints, per dtype and shape, the M whose rows were not
bitwise equal, then JSON. Why it matters: the call cache keys a reply without its batch, so a
dtype whose rows depend on their companions makes a reply depend on them too
(docs/benchmarks.md "The embedded engine").
"""
from __future__ import annotations

import argparse
import json

SHAPES = [(576, 576), (576, 192), (576, 1536), (1536, 576)]
SIZES = [1, 2, 7, 16, 32, 33, 40, 64, 65, 100, 129, 257, 511, 1000, 1999]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dtypes", nargs="+", default=["float32", "bfloat16"])
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()

    import torch

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    found = {}
    for name in args.dtypes:
        dtype = getattr(torch, name)
        for k, n in SHAPES:
            layer = torch.nn.Linear(k, n, bias=False).to(dtype)
            x = torch.randn(2000, k).to(dtype)
            differ = []
            with torch.inference_mode():
                whole = layer(x)
                for m in SIZES:
                    for start in (0, 7):
                        if start + m <= 2000 and not torch.equal(layer(x[start:start + m]), whole[start:start + m]):
                            differ.append(f"{m}@{start}")
                if not torch.equal(layer(x[:200].view(4, 50, k)).reshape(200, n), whole[:200]):
                    differ.append("(4,50,K)")
            found[f"{name} {k}->{n}"] = differ
            print(f"{name:9} {k:>5}->{n:<5} rows differ at M = {', '.join(differ) or 'none'}")
    print(json.dumps({"torch": torch.__version__, "threads": args.threads, "differ": found}))


if __name__ == "__main__":
    main()
