"""Du et al.'s own tables (rule paper_du, results/paper/du/): the accuracy table from the judged
predictions (scored as Table 1 scores them), and with the overlays the scaling table (from
results/paper/dynamics.csv) and the cross-model table (lmad.paper.du)."""
from __future__ import annotations

import logging

import polars as pl

from ..atomic import write_text
from ..paper import du
from ..paper import label
from .paper import _write_csv, load_judgments, read_headline, with_score

log = logging.getLogger(__name__)


def du_tables(judgments: list[str], validation: str, accuracy_csv: str, accuracy_md: str, backbones: list[str],
              datasets: list[str], methods: list[str], metric: str, rounds: int, agents: dict[str, int],
              models: dict[str, list[str]], provenance: dict, dynamics: list[str] = (), scaling_csv: str | None = None,
              scaling_md: str | None = None, cross_csv: str | None = None, cross_md: str | None = None) -> None:
    """``agents``: each backbone's number of debating agents; ``models``: each backbone's member models
    (one for a plain model); ``rounds``: the debate's revision rounds (config debate.rounds)."""
    head = read_headline(validation, metric)
    judged = with_score(load_judgments(judgments), head.metric)
    cells = du.counts(judged.select("backbone", "dataset", "method", "score").to_dicts() if len(judged) else [])
    labels = {d: label(d) for d in datasets}
    rows = du.accuracy_rows(cells, backbones, datasets, methods)
    _write_csv(accuracy_csv, rows, du.ACCURACY_COLUMNS)
    write_text(accuracy_md, du.accuracy_markdown(rows, datasets, labels, rounds))
    if scaling_csv:
        dyn = []
        for path in dynamics:
            try:
                dyn += pl.read_csv(path, infer_schema_length=None).to_dicts()
            except pl.exceptions.NoDataError:  # no debate method: an empty table
                continue
        scaled = du.scaling_rows(dyn, agents)
        _write_csv(scaling_csv, scaled, du.SCALING_COLUMNS)
        write_text(scaling_md, du.scaling_markdown(scaled, datasets, labels))
    if cross_csv:
        crossed = du.cross_model_rows(cells, backbones, models, datasets)
        _write_csv(cross_csv, crossed, du.CROSS_COLUMNS)
        write_text(cross_md, du.cross_model_markdown(crossed, labels))
    log.info("Du et al. tables: accuracy %d rows%s%s", len(rows), ", scaling" if scaling_csv else "",
             ", cross-model" if cross_csv else "")
