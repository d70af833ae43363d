"""Which extraction form read each model reply, per answer type, in a finished run.

    python benchmarks/extraction_forms.py [results]

Reads every samples and debate-round table under the results folder (the solver's and the
debaters' replies, column ``answer_method``: the form that matched, or the fallback taken)
and the questions tables (``answer_type``), and prints one count table per answer type.
"""
from __future__ import annotations

import sys
from pathlib import Path

import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "workflow"))

from lmad import layout  # noqa: E402
from lmad.schemas import read_table  # noqa: E402


def answer_types(root: Path) -> dict[tuple[str, str], str]:
    out = {}
    for p in root.rglob("data/*.parquet"):
        for r in read_table("questions", p).select("dataset", "qid", "answer_type").to_dicts():
            out[(r["dataset"], r["qid"])] = r["answer_type"]
    return out


def replies(root: Path) -> pl.DataFrame:
    """(dataset, qid, answer_method) of every solver and debate reply of the run."""
    frames = []
    for p in root.rglob("*.parquet"):
        try:
            where = layout.parse(p)
        except ValueError:
            continue
        if where.kind == "samples" or (where.kind == "debate_round" and where.part == ""):
            frames.append(read_table("samples", p).select("qid", "answer_method")
                          .with_columns(pl.lit(layout.configured_dataset(where.dataset)).alias("dataset")))
    return pl.concat(frames) if frames else pl.DataFrame(schema={"qid": pl.String, "answer_method": pl.String,
                                                                  "dataset": pl.String})


def main(root: Path) -> None:
    kinds = answer_types(root)
    got = replies(root)
    got = got.with_columns(pl.struct("dataset", "qid").map_elements(
        lambda r: kinds.get((r["dataset"], r["qid"]), "?"), return_dtype=pl.String).alias("answer_type"))
    for kind in sorted(got["answer_type"].unique()):
        sub = got.filter(pl.col("answer_type") == kind)
        counts = sub.group_by("answer_method").len().sort("len", descending=True)
        print(f"\n{kind}: {len(sub)} replies")
        for r in counts.to_dicts():
            print(f"  {r['answer_method']:<32} {r['len']:>5}  {100 * r['len'] / len(sub):5.1f} %")


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "results"))
