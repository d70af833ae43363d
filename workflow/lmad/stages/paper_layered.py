"""The layered-disagreement paper's own tables (rules paper_layered, paper_layered_jury,
paper_layered_probe; results/paper/layered/): Table 2 and layers B and C from the disagreement
study's inputs (lmad.studies.disagreement.stages.load_layers), the jury and layer D from the studies'
own tables (results/paper/jury.csv, probe.csv), arranged as the paper reports them (lmad.paper.layered)."""
from __future__ import annotations

import logging

import polars as pl

from ..atomic import write_text
from ..paper import label
from ..paper import layered as ly
from .paper import _write_csv

log = logging.getLogger(__name__)

PUBLISHED = ("\nThe paper's own cells (timing grid: 74.8 % → 24.4 %, a 50.4-point drop; tri3 pilot: 69.9 / 50.9 / "
             "19.0 %, −50.8 pp; layer B: 81.1 % exact agreement, collapse ratio 1.024, gap −1.2 pp; layer C: "
             "+23.1 pp on 39 first-round pairs; the jury: 299/299 ties, swap-consistency 0.89) are recomputed "
             "through this table's code in tests/test_paper_published_cells.py.\n")


def _rows(paths: list[str]) -> list[dict]:
    """The rows of the studies' CSV tables (an empty table, written without a header, has none)."""
    out = []
    for p in paths:
        try:
            out += pl.read_csv(p, infer_schema_length=None).to_dicts()
        except pl.exceptions.NoDataError:
            continue
    return out


def layered_tables(steps: list[str], labels: list[str], validation: list[str], table2_csv: str, table2_md: str,
                   layer_b_csv: str, layer_b_md: str, layer_c_csv: str, layer_c_md: str, provenance: dict,
                   lmad_reports: list[str] | None = None) -> None:
    """Table 2 (layer A by tone), layer B and layer C, per backbone, dataset and debating method."""
    from ..studies.disagreement.stages import load_layers

    reports, judged, status, line = load_layers(steps, labels, validation, lmad_reports)
    cells = ly.cells(reports, judged, status)
    table2, layer_b, layer_c = ly.table2_rows(cells), ly.layer_b_rows(cells), ly.layer_c_rows(cells)
    _write_csv(table2_csv, table2, ly.TABLE2_COLUMNS)
    write_text(table2_md, ly.table2_markdown(table2) + PUBLISHED)
    _write_csv(layer_b_csv, layer_b, ly.LAYER_B_COLUMNS)
    write_text(layer_b_md, ly.layer_b_markdown(layer_b, line) + PUBLISHED)
    _write_csv(layer_c_csv, layer_c, ly.LAYER_C_COLUMNS)
    write_text(layer_c_md, ly.layer_c_markdown(layer_c) + PUBLISHED)
    log.info("layered tables: Table 2 %d rows, layer B %d (%s), layer C %d", len(table2), len(layer_b), status,
             len(layer_c))


def layered_jury(jury: list[str], csv: str, md: str, provenance: dict) -> None:
    """The swap-checked jury as the paper reports it, from results/paper/jury.csv."""
    rows = ly.jury_rows(_rows(jury))
    _write_csv(csv, rows, ly.JURY_COLUMNS)
    names = {m for r in rows for m in (r["method_a"], r["method_b"])}
    write_text(md, ly.jury_markdown(rows, {m: label(m) for m in names}) + PUBLISHED)
    log.info("layered jury: %d backbones", len(rows))


def layered_probe(probe: list[str], csv: str, md: str, provenance: dict) -> None:
    """Layer D as the paper reports it, from results/paper/probe.csv."""
    rows = ly.probe_rows(_rows(probe))
    _write_csv(csv, rows, ly.PROBE_COLUMNS)
    write_text(md, ly.probe_markdown(rows))
    log.info("layered layer D: %d backbones", len(rows))
