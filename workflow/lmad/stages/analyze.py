"""Rules ``analyze`` and ``plot_accuracy``: per-backbone accuracy table from saved Parquet."""
from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import polars as pl

from ..atomic import write_csv, write_text
from ..number_format import fmt, markdown, pct
from ..headline import headline, score_expr, score_vectors
from ..judge_battery import cohen_kappa
from ..layout import run_name
from ..paper import label
from ..plotting import pyplot, save
from ..schemas import read_table, write_table
from ..societies import held_out_note
from .societies import held_out as held_out_rows
from ..stats import macro_average, mean_sd, paired_bootstrap_diff

log = logging.getLogger(__name__)
AVG = "Avg."


def summarize(backbone: str, judged: pl.DataFrame, preds: pl.DataFrame) -> pl.DataFrame:
    costs = preds.group_by("dataset", "method").agg(
        pl.col("calls").mean().alias("calls_per_q"),
        pl.col("prompt_tokens").mean().cast(pl.Float64).alias("prompt_tokens_per_q"),
        pl.col("completion_tokens").mean().cast(pl.Float64).alias("completion_tokens_per_q"))
    # judge accuracy over ALL predictions: an unscored reply is an incorrect decision
    acc = judged.group_by("dataset", "method").agg(
        pl.len().alias("n"), (pl.col("judge_correct").is_null() & (pl.col("judge_verdict") != "rule")).sum().alias("n_unscored"),
        score_expr("judge").mean().alias("judge_acc"), pl.col("em").mean(), pl.col("f1").mean(),
        score_expr("judge").alias("_judge"), pl.col("em").alias("_em"),
        (pl.col("judge_verdict") == "rule").all().alias("_ruled"))
    # a rule-scored set has no judge verdicts to compare with EM: no kappa (it would be 1 by construction)
    acc = acc.with_columns(pl.struct("_judge", "_em", "_ruled").map_elements(
        lambda r: None if r["_ruled"] else cohen_kappa(r["_judge"], r["_em"]), return_dtype=pl.Float64
    ).alias("judge_em_kappa")).drop("_judge", "_em", "_ruled")
    return acc.join(costs, on=["dataset", "method"], how="left").with_columns(
        pl.lit(backbone).alias("backbone"), pl.col("n").cast(pl.Int64), pl.col("n_unscored").cast(pl.Int64))


def delta_rows(judged: pl.DataFrame, methods: list[str], n_resamples: int, seed: int,
               metric: str = "judge") -> list[dict]:
    """Δ of each method vs the best OTHER method by macro-averaged score, with a
    paired-bootstrap 95% CI (questions resampled within each dataset)."""
    vectors = {m: score_vectors(judged, m, score_expr(metric)) for m in methods}
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


def _macro_of(summary: pl.DataFrame, method: str, column: str, datasets: list[str]) -> float | None:
    """Macro-average of one summary column over every dataset (None when a dataset lacks it)."""
    cells = {(r["dataset"]): r[column] for r in summary.filter(pl.col("method") == method).to_dicts()}
    return _macro({d: cells.get(d) if cells.get(d) is not None and np.isfinite(cells[d]) else None
                   for d in datasets})


def analyze(judgments: list[str], predictions: list[str], validation: str, accuracy: str, table_csv: str,
            table_md: str, backbone: str, methods: list[str], datasets: list[str], bootstrap_resamples: int,
            metric: str, seed: int, provenance: dict, held_out: list[str] = (),
            held_out_size: int | None = None) -> None:
    # societies on (``held_out``: the backbone's society split): every method on the held-out questions only
    judged, preds = (held_out_rows(pl.concat([read_table(name, p) for p in paths])
                                   .with_columns(pl.lit(backbone).alias("backbone")), held_out).drop("backbone")
                     for name, paths in (("judgments", judgments), ("predictions", predictions)))
    head = headline(metric, read_table("judge_validation", validation).row(0, named=True))
    ruled = judged.group_by("dataset").agg((pl.col("judge_verdict") == "rule").all().alias("ruled")).filter("ruled")
    judged_sets = [d for d in datasets if d not in set(ruled["dataset"])]  # κ compares a judge with EM
    summary = summarize(backbone, judged, preds)
    write_table("accuracy", summary, accuracy, provenance)

    column = head.accuracy_column
    cell = {(r["dataset"], r["method"]): r[column] for r in summary.to_dicts()}
    body = [[d] + [pct(cell.get((d, m))) for m in methods] for d in datasets]
    avg = {m: _macro({d: cell.get((d, m)) for d in datasets}) for m in methods}
    body.append(["Avg."] + [pct(avg[m]) for m in methods])
    deltas = delta_rows(judged, methods, bootstrap_resamples, seed, head.metric)

    write_csv(table_csv, pl.DataFrame([{"metric": head.metric, **dict(zip(["dataset", *methods], row))}
                                       for row in body]))
    write_csv(Path(table_csv).with_name("delta.csv"),
              pl.DataFrame(deltas, schema=["method", "avg", "best_other", "best_other_avg", "delta", "ci_lo", "ci_hi"],
                           orient="row").with_columns(pl.lit(head.metric).alias("metric")))
    unscored = summary.group_by("method").agg(pl.col("n_unscored").sum(), pl.col("n").sum())
    unscored = {r["method"]: r for r in unscored.to_dicts()}
    cost = {(r["method"]): r for r in summary.group_by("method").agg(
        pl.col("calls_per_q").mean(), pl.col("completion_tokens_per_q").mean()).to_dicts()}
    text = [f"# {head.short} (%) — backbone `{backbone}`\n\n", head.banner(),
            markdown(["Dataset", *methods], body),
            f"\nΔ vs the best other method ({head.short}, macro-average, paired bootstrap 95% CI, "
            f"{bootstrap_resamples} resamples, seed {seed}):\n",
            markdown(["Method", "Avg.", "Best other", "Δ [95% CI]"],
                     [[d["method"], pct(d["avg"]), d["best_other"],
                       f"{pct(d['delta'], True)} [{pct(d['ci_lo'], True)}, {pct(d['ci_hi'], True)}]"]
                      for d in deltas]),
            "\nEvery metric (%, macro-average over datasets). Judge accuracy counts an unscored reply as "
            "incorrect; κ = Cohen's kappa between judge verdicts and EM on the same predictions (mean over the "
            "datasets a judge scored). EM/F1 by each benchmark's official rules; on number, expression and multiple-choice sets "
            "both are the answer type's accuracy (numeric or expression equivalence, the letter), and no judge is "
            "asked. The judge "
            + ("passed validation.\n" if head.judge_passed else "FAILED validation." + (
                " (shown: config analysis.metric asks for it)\n" if head.metric == "judge" else
                " Its accuracy is withheld; κ shows how it disagrees with EM.\n")),
            markdown(["Method", "Judge acc.", "Unscored", "κ (judge, EM)", "EM", "F1"],
                     [[m, pct(_macro_of(summary, m, "judge_acc", datasets)) if head.judge_shown else "FAILED",
                       f"{unscored[m]['n_unscored']}/{unscored[m]['n']}" if m in unscored else "–",
                       fmt(_macro_of(summary, m, "judge_em_kappa", judged_sets) if judged_sets else None),
                       pct(_macro_of(summary, m, "em", datasets)), pct(_macro_of(summary, m, "f1", datasets))]
                      for m in methods]),
            "\nCost per question (mean over datasets):\n",
            markdown(["Method", "Calls", "Generated tokens"],
                     [[m, fmt(cost[m]["calls_per_q"]), fmt(cost[m]["completion_tokens_per_q"], digits=1)]
                      for m in methods if m in cost]),
            held_out_note(methods, held_out_size)]
    write_text(table_md, "".join(text))
    log.info("wrote %s (headline %s)", table_md, head.metric)


def replicate_rows(summaries: dict[int, pl.DataFrame], column: str, datasets: list[str], methods: list[str]
                   ) -> list[dict]:
    """Per (dataset, method) and per method's macro-average (dataset "Avg."), each replicate's
    ``column`` of its accuracy summary, in seed order, and their mean and sample SD. A replicate
    missing a cell leaves the cell out of that replicate (the count says how many remain)."""
    seeds = sorted(summaries)
    cells = {s: {(r["dataset"], r["method"]): r[column] for r in summaries[s].to_dicts()} for s in seeds}
    rows = []
    for m in methods:
        for d in [*datasets, AVG]:
            per = {}
            for s in seeds:
                v = _macro({x: cells[s].get((x, m)) for x in datasets}) if d == AVG else cells[s].get((d, m))
                if v is not None and np.isfinite(v):
                    per[s] = float(v)
            mean, sd = mean_sd(list(per.values()))
            rows.append({"dataset": d, "method": m, "seeds": list(per), "values": list(per.values()),
                         "n_replicates": len(per), "mean": mean, "sd": sd})
    return rows


def replicates(accuracies: list[str], validation: str, table: str, csv: str, md: str, backbone: str,
               methods: list[str], datasets: list[str], metric: str, provenance: dict) -> None:
    """One backbone's headline accuracy over its seeded replicates: mean ± sample SD per cell
    (lmad.stats.mean_sd); each replicate's own table (and its Δ test) is in its run's folder."""
    from ..layout import parse, replicate_of

    head = headline(metric, read_table("judge_validation", validation).row(0, named=True))
    summaries = {replicate_of(parse(p).backbone or ""): read_table("accuracy", p) for p in accuracies}
    if None in summaries:
        raise ValueError(f"replicates of {backbone}: an accuracy table outside a seed{{s}}/ folder in {accuracies}")
    rows = [{"backbone": backbone, "metric": head.metric, **r}
            for r in replicate_rows(summaries, head.accuracy_column, datasets, methods)]
    write_table("replicates", rows, table, provenance)
    write_csv(csv, pl.DataFrame([{k: v for k, v in r.items() if k not in ("seeds", "values")} for r in rows]))
    by = {(r["dataset"], r["method"]): r for r in rows}
    seeds = sorted(summaries)
    body = [[d] + [_mean_sd_text(by[(d, m)], len(seeds)) for m in methods] for d in [*datasets, AVG]]
    write_text(md, "".join([
        f"# {head.short} (%) — backbone `{backbone}`, {len(seeds)} replicates (seeds {', '.join(map(str, seeds))})\n\n",
        head.banner(), markdown(["Dataset", *methods], body),
        "\nMean ± sample SD (n − 1) over the replicates of each cell's headline metric; Avg. = each replicate's "
        "macro-average over the datasets, then mean ± SD. A replicate changes only the call seeds (same questions, "
        "same option order). Each replicate's Δ test (paired bootstrap over questions) is in its own table, "
        f"results/{backbone}/seed{{s}}/analysis/table.md; Table 1 averages each question's score over the "
        "replicates before its bootstrap.\n"]))
    log.info("wrote %s (%d replicates)", md, len(seeds))


def _mean_sd_text(row: dict, n_seeds: int) -> str:
    """"mean ± SD"; a cell that fewer replicates than the run's have says how many."""
    if row["mean"] is None:
        return "–"
    text = pct(row["mean"]) + (f" ± {pct(row['sd'])}" if row["sd"] is not None else "")
    return text if row["n_replicates"] == n_seeds else f"{text} (n = {row['n_replicates']})"


def plot_accuracy(accuracy: str, validation: str, png: str, pdf: str, methods: list[str], datasets: list[str],
                  metric: str, provenance: dict) -> None:
    plt = pyplot(paper_style=False)
    summary = read_table("accuracy", accuracy, keys=True)
    head = headline(metric, read_table("judge_validation", validation).row(0, named=True))
    column = head.accuracy_column
    cell = {(r["dataset"], r["method"]): r[column] for r in summary.to_dicts()}
    fig, ax = plt.subplots(figsize=(1.6 + 1.3 * len(datasets), 3.2))
    width = 0.8 / len(methods)
    for i, m in enumerate(methods):
        ys = [np.nan if cell.get((d, m)) is None else 100 * cell[(d, m)] for d in datasets]  # unscored: no bar
        ax.bar(np.arange(len(datasets)) + (i - (len(methods) - 1) / 2) * width, ys, width, label=label(m))
    ax.set_xticks(np.arange(len(datasets)), [label(d) for d in datasets])  # as the paper's accuracy figure
    ax.set_ylabel(head.axis)
    ax.set_ylim(0, 100)
    judge_note = "judge passed validation" if head.judge_passed else "judge FAILED validation"
    run = run_name(summary["backbone"][0], summary["replicate"][0]) if len(summary) else ""
    ax.set_title(f"{run}: {head.label} ({judge_note})", fontsize="small")
    ax.legend(ncols=min(len(methods), 4), fontsize="small")
    fig.tight_layout()
    save(fig, png, pdf, head.label, deterministic=False, subject=str(provenance))
