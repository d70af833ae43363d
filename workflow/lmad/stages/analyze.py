"""Rules ``analyze`` and ``plot_accuracy``: per-backbone accuracy table from saved Parquet."""
from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import polars as pl

from ..schemas import read_table, write_table
from ..stats import macro_average, paired_bootstrap_diff

log = logging.getLogger(__name__)


def summarize(backbone: str, judged: pl.DataFrame, preds: pl.DataFrame) -> pl.DataFrame:
    costs = preds.group_by("dataset", "method").agg(
        pl.col("calls").mean().alias("calls_per_q"),
        pl.col("prompt_tokens").mean().cast(pl.Float64).alias("prompt_tokens_per_q"),
        pl.col("completion_tokens").mean().cast(pl.Float64).alias("completion_tokens_per_q"))
    acc = judged.group_by("dataset", "method").agg(
        pl.len().alias("n"), pl.col("judge_correct").is_not_null().sum().alias("n_scored"),
        pl.col("judge_correct").mean().alias("judge_acc"), pl.col("em").mean(), pl.col("f1").mean())
    return acc.join(costs, on=["dataset", "method"], how="left").with_columns(
        pl.lit(backbone).alias("backbone"), pl.col("n").cast(pl.Int64), pl.col("n_scored").cast(pl.Int64))


def correctness(judged: pl.DataFrame, method: str) -> dict[str, np.ndarray]:
    """Per-dataset 0/1/NaN vectors aligned by question id (for paired resampling)."""
    sub = judged.filter(pl.col("method") == method).sort("qid")
    return {ds: part["judge_correct"].fill_null(float("nan")).to_numpy()
            for ds, part in ((k[0], g) for k, g in sub.group_by("dataset"))}


def delta_rows(judged: pl.DataFrame, methods: list[str], n_resamples: int, seed: int) -> list[dict]:
    """Δ of each method vs the best OTHER method by macro-averaged accuracy, with a
    paired-bootstrap 95% CI (questions resampled within each dataset)."""
    vectors = {m: correctness(judged, m) for m in methods}
    datasets = judged["dataset"].unique().to_list()
    macro = {m: _macro({d: float(np.nanmean(v)) if (v := vectors[m].get(d)) is not None and np.isfinite(v).any()
                        else None for d in datasets}) for m in methods}
    rows = []
    for m in methods:
        others = [o for o in methods if o != m and macro[o] is not None]
        if not others or macro[m] is None:
            continue
        best = max(others, key=lambda o: (macro[o], -methods.index(o)))
        try:
            ci = paired_bootstrap_diff(vectors[m], vectors[best], n_resamples=n_resamples, seed=seed)
        except ValueError as err:  # e.g. a dataset where no question is scored for both
            log.warning("no Δ for %s vs %s: %s", m, best, err)
            continue
        rows.append({"method": m, "avg": macro[m], "best_other": best, "best_other_avg": macro[best],
                     "delta": ci["diff"], "ci_lo": ci["lo"], "ci_hi": ci["hi"]})
    return rows


def _macro(per_dataset: dict[str, float | None]) -> float | None:
    """Macro-average over every dataset; None when one has no value (as Table 1: an average
    over fewer datasets would not compare across methods)."""
    if any(v is None for v in per_dataset.values()):
        return None
    return macro_average(per_dataset)


def _pct(x) -> str:
    return "–" if x is None or not np.isfinite(x) else f"{100 * x:.2f}"


def _signed(x) -> str:
    return f"{100 * x:+.2f}"


def markdown_table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows]) + "\n"


def analyze(judgments: list[str], predictions: list[str], accuracy: str, table_csv: str, table_md: str,
            backbone: str, methods: list[str], datasets: list[str], bootstrap_resamples: int, seed: int,
            provenance: dict) -> None:
    judged = pl.concat([read_table("judgments", p) for p in judgments])
    preds = pl.concat([read_table("predictions", p) for p in predictions])
    summary = summarize(backbone, judged, preds)
    write_table("accuracy", summary, accuracy, provenance)

    cell = {(r["dataset"], r["method"]): r["judge_acc"] for r in summary.to_dicts()}
    body = [[d] + [_pct(cell.get((d, m))) for m in methods] for d in datasets]
    avg = {m: _macro({d: cell.get((d, m)) for d in datasets}) for m in methods}
    body.append(["Avg."] + [_pct(avg[m]) for m in methods])
    deltas = delta_rows(judged, methods, bootstrap_resamples, seed)

    pl.DataFrame([dict(zip(["dataset", *methods], row)) for row in body]).write_csv(table_csv)
    pl.DataFrame(deltas, schema=["method", "avg", "best_other", "best_other_avg", "delta", "ci_lo", "ci_hi"],
                 orient="row").write_csv(Path(table_csv).with_name("delta.csv"))
    rows = {(r["dataset"], r["method"]): r for r in summary.to_dicts()}
    official = {m: {k: _macro({d: rows[(d, m)][k] if (d, m) in rows else None for d in datasets})
                    for k in ("em", "f1")} for m in methods}
    cost = {(r["method"]): r for r in summary.group_by("method").agg(
        pl.col("calls_per_q").mean(), pl.col("completion_tokens_per_q").mean()).to_dicts()}
    text = [f"# Judge accuracy (%) — backbone `{backbone}`\n",
            markdown_table(["Dataset", *methods], body),
            f"\nΔ vs the best other method (macro-average, paired bootstrap 95% CI, "
            f"{bootstrap_resamples} resamples, seed {seed}):\n",
            markdown_table(["Method", "Avg.", "Best other", "Δ [95% CI]"],
                           [[d["method"], _pct(d["avg"]), d["best_other"],
                             f"{_signed(d['delta'])} [{_signed(d['ci_lo'])}, {_signed(d['ci_hi'])}]"]
                            for d in deltas]),
            "\nOfficial EM and F1 (HotpotQA rules, max over aliases; %, macro-average over datasets) — "
            "a check on the judge:\n",
            markdown_table(["Method", "EM", "F1"], [[m, _pct(official[m]["em"]), _pct(official[m]["f1"])]
                                                    for m in methods]),
            "\nCost per question (mean over datasets):\n",
            markdown_table(["Method", "Calls", "Generated tokens"],
                           [[m, f"{cost[m]['calls_per_q']:.2f}", f"{cost[m]['completion_tokens_per_q']:.1f}"]
                            for m in methods if m in cost])]
    Path(table_md).write_text("".join(text))
    log.info("wrote %s", table_md)


def plot_accuracy(accuracy: str, png: str, pdf: str, methods: list[str], datasets: list[str],
                  provenance: dict) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    summary = read_table("accuracy", accuracy)
    cell = {(r["dataset"], r["method"]): r["judge_acc"] for r in summary.to_dicts()}
    fig, ax = plt.subplots(figsize=(1.6 + 1.3 * len(datasets), 3.2))
    width = 0.8 / len(methods)
    for i, m in enumerate(methods):
        ys = [np.nan if cell.get((d, m)) is None else 100 * cell[(d, m)] for d in datasets]  # unscored: no bar
        ax.bar(np.arange(len(datasets)) + (i - (len(methods) - 1) / 2) * width, ys, width, label=m)
    ax.set_xticks(np.arange(len(datasets)), datasets)
    ax.set_ylabel("judge accuracy (%)")
    ax.set_ylim(0, 100)
    ax.set_title(f"{summary['backbone'][0] if len(summary) else ''}")
    ax.legend(ncols=min(len(methods), 4), fontsize="small")
    fig.tight_layout()
    meta = {"Title": "judge accuracy", "Subject": str(provenance)}
    fig.savefig(png, dpi=150, metadata={"Title": meta["Title"]})
    fig.savefig(pdf, metadata=meta)
    plt.close(fig)
