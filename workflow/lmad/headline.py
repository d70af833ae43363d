"""Which metric a table or figure shows, and the sentence that says why.

Every output that reports accuracy goes through :func:`headline`: with ``analysis.metric:
auto`` the judge's accuracy is the headline only if the judge passed its known-answer
validation (``lmad.judge_battery``); otherwise official exact match is shown and the
output says so at the top. Judge accuracy counts an unscored reply as incorrect.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import polars as pl

from .number_format import pct

#: metric → (long label for titles and captions, short label for columns and axes)
METRICS = {
    "judge": ("judge accuracy", "Judge acc."),
    "em": ("exact match (official EM)", "EM"),
    "f1": ("token F1 (official)", "F1"),
}


def score_expr(metric: str) -> pl.Expr:
    """Per-prediction 0..1 score of a metric; an unscored judge reply is incorrect. A prediction
    scored by its answer type's rule (numbers, expressions, letters) is never sent to the judge:
    its judge score is the rule's."""
    if metric == "judge":
        return judge_or_rule(pl.col("judge_correct").fill_null(0.0))
    return pl.col(metric)


def judge_or_rule(judged: pl.Expr | None = None) -> pl.Expr:
    """Per prediction: the rule's decision where its type is rule-scored (judge_verdict "rule"),
    else ``judged`` (default: the judge's decision as recorded, null when unscored)."""
    judged = pl.col("judge_correct") if judged is None else judged
    return pl.when(pl.col("judge_verdict") == "rule").then(pl.col("correct").cast(pl.Float64)).otherwise(judged)


def score_vectors(judged: pl.DataFrame, method: str, score: pl.Expr,
                  datasets: list[str] | None = None) -> dict[str, np.ndarray]:
    """One method's per-question ``score`` per dataset, sorted by question id so two methods'
    vectors pair up question by question (paired bootstrap). Every dataset of ``datasets``
    gets a vector, empty where the method has none; by default the method's own datasets."""
    sub = judged.filter(pl.col("method") == method).sort("qid")
    names = sub["dataset"].unique(maintain_order=True).to_list() if datasets is None else datasets
    return {d: sub.filter(pl.col("dataset") == d).select(score).to_series().to_numpy() for d in names}


def _pct(x: float) -> str:
    return f"{pct(x, digits=1)} %" if x is not None and math.isfinite(x) else "–"


@dataclass(frozen=True)
class Headline:
    metric: str           # judge | em | f1
    label: str            # long, for captions and titles: "exact match (official EM)"
    short: str            # column / axis label: "EM"
    judge_passed: bool
    validation: str       # one line: the judge's validation figures and verdict
    warning: str          # plain words for the top of an output ("" when the judge is trusted)

    @property
    def accuracy_column(self) -> str:
        """The column of the ``accuracy`` table that holds this metric."""
        return "judge_acc" if self.metric == "judge" else self.metric

    @property
    def judge_shown(self) -> bool:
        """Whether judge accuracy may appear beside the headline: the judge passed validation,
        or the config names it as the metric (then under the warning)."""
        return self.judge_passed or self.metric == "judge"

    @property
    def axis(self) -> str:
        return f"{self.short} (%)"

    def banner(self) -> str:
        """Markdown lines for the top of a table: the warning (if any) and the validation."""
        lines = [f"> **{self.warning}**"] if self.warning else []
        return "\n".join(lines + [f"> {self.validation}", f"> Headline metric: **{self.label}**.", ""]) + "\n"


def validation_line(v: dict) -> str:
    verdict = "PASSED" if v["passed"] else "FAILED"
    return (f"Judge `{v['judge_model']}` validation {verdict} on {v['n_correct_items']} known-correct and "
            f"{v['n_incorrect_items']} known-incorrect battery items: recall {_pct(v['tpr'])} on known-correct, "
            f"{_pct(v['tnr'])} on known-incorrect (floor {100 * v['min_recall']:.0f} % each), balanced accuracy "
            f"{_pct(v['balanced_acc'])}, unscored {_pct(v['unscored_rate'])} — {v['reason']}.")


def headline(setting: str, validation: dict) -> Headline:
    """The metric to show for ``analysis.metric`` = ``setting`` given the judge's validation row."""
    passed = bool(validation["passed"])
    metric = ("judge" if passed else "em") if setting == "auto" else setting
    warning = ""
    if not passed and metric == "judge":
        warning = (f"The judge `{validation['judge_model']}` FAILED validation, yet analysis.metric: judge shows "
                   "its accuracy: these numbers are not a trustworthy measure of correctness.")
    elif not passed:
        warning = (f"The judge `{validation['judge_model']}` FAILED validation: its accuracy is not a trustworthy "
                   f"measure here, so the headline metric is {METRICS[metric][0]}.")
    return Headline(metric, METRICS[metric][0], METRICS[metric][1], passed, validation_line(validation), warning)
