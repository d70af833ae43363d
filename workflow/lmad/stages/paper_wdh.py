"""When Debate Helps' Table 1 (rule paper_wdh, results/paper/wdh/table1.{csv,md}): vote20's
predictions and each debate's round-3 state, per backbone and displayed dataset, on the held-out
questions when the run has a society split; and over replicate runs (config ``seeds``) §A.5's
paired gains of each society debate over Vanilla Debate (rule paper_wdh_robustness,
results/paper/wdh/robustness.{csv,md}) (lmad.paper.wdh)."""
from __future__ import annotations

import logging

import polars as pl

from .. import layout
from ..atomic import write_text
from ..number_format import fmt
from ..paper import wdh
from .. import societies as so
from ..schemas import read_table
from .paper import _write_csv
from .societies import held_out as held_out_rows

log = logging.getLogger(__name__)


def _construction(splits: list[str], datasets: list[str]) -> dict[tuple[str, str], int] | None:
    """{(backbone, dataset): its construction questions} of every split (None without a split)."""
    if not splits:
        return None
    out = {}
    for path in splits:
        backbone = layout.parse(path).backbone
        split = read_table("society_split", path)
        for d in datasets:
            out[(backbone, d)] = split.filter((pl.col("dataset") == d) & (pl.col("split") == so.CONSTRUCTION)).height
    return out


def _held_out_keys(questions: dict[tuple[str, str], dict], backbones: list[str], splits: list[str]) -> set | None:
    """{(backbone, dataset, qid)} on the held-out evaluation split; None without a split (every question)."""
    if not splits:
        return None
    frame = pl.DataFrame([{"backbone": b, "dataset": d, "qid": q} for b in backbones for d, q in questions],
                         schema={"backbone": pl.String, "dataset": pl.String, "qid": pl.String})
    return {tuple(r) for r in held_out_rows(frame, splits).iter_rows()}


def wdh_table1(questions: list[str], predictions: list[str], rounds: list[str], states: list[str], csv: str, md: str,
               backbones: list[str], datasets: list[str], benchmarks: dict[str, str], methods: list[str],
               vote_samples: int, provenance: dict, held_out: list[str] = (), held_out_size: int | None = None) -> None:
    from .units import read_golds

    golds = read_golds(questions)
    rows_of = {(q["dataset"], q["qid"]): q for p in questions for q in read_table("questions", p).to_dicts()}
    keep = _held_out_keys(rows_of, backbones, list(held_out))
    wanted = set(datasets)

    def kept(backbone: str, dataset: str) -> set[str] | None:
        return None if keep is None else {q for b, d, q in keep if b == backbone and d == dataset}

    scored: dict[tuple[str, str, str], dict[str, bool]] = {}
    for path in predictions:
        loc = layout.parse(path)
        if loc.dataset not in wanted:
            continue
        p = read_table("predictions", path)
        answers = dict(zip(p["qid"].to_list(), p["prediction"].to_list()))
        g = {q: golds[(loc.dataset, q)] for q in answers}
        scored[(loc.backbone, loc.method, loc.dataset)] = wdh.score(answers, g, kept(loc.backbone, loc.dataset))
    states_at = {}
    for path in states:
        loc = layout.parse(path)
        states_at[(loc.backbone, loc.dataset, loc.method)] = path
    for path in rounds:
        loc = layout.parse(path)
        if loc.round != wdh.ROUND:
            raise ValueError(f"{path}: Table 1 reads round {wdh.ROUND} (config debate.rounds)")
        if loc.dataset not in wanted:
            continue
        qs = {q: row for (d, q), row in rows_of.items() if d == loc.dataset}
        answers = wdh.round_answers(qs, read_table("samples", path).to_dicts(),
                                    read_table("debate_state", states_at[(loc.backbone, loc.dataset, loc.method)])
                                    .to_dicts())
        g = {q: golds[(loc.dataset, q)] for q in answers}
        scored[(loc.backbone, loc.method, loc.dataset)] = wdh.score(answers, g, kept(loc.backbone, loc.dataset))

    rows = wdh.table_rows(wdh.cells(scored), backbones, wdh.row_methods(methods), datasets,
                          _construction(list(held_out), datasets))
    _write_csv(csv, rows, wdh.CSV_COLUMNS)
    if not rows:
        write_text(md, wdh.title(vote_samples) + "**No vote20 or debate method in this run: nothing to report.**\n")
        return
    write_text(md, wdh.title(vote_samples) + wdh.table_markdown(rows, datasets, benchmarks, vote_samples)
               + wdh.caption(datasets, vote_samples, bool(held_out), held_out_size))
    log.info("When Debate Helps Table 1: %d rows over %d column(s)", len(rows), len(datasets))


def wdh_robustness(table1: str, csv: str, md: str, provenance: dict) -> None:
    rows = pl.read_csv(table1, infer_schema_length=None).to_dicts()
    gains = wdh.paired_gains(rows)
    flat = [{**g, "seeds": " ".join(map(str, g["seeds"])), "gains": " ".join(fmt(x, signed=True) for x in g["gains"])}
            for g in gains]
    _write_csv(csv, flat, wdh.ROBUSTNESS_COLUMNS)
    write_text(md, wdh.robustness_markdown(gains))
    log.info("When Debate Helps §A.5: %d society debate(s) against Vanilla Debate", len(gains))


def wdh_table20(questions: list[str], proposals: list[str], judgments: list[str], rounds0: list[str], csv: str, md: str,
                backbones: list[str], datasets: list[str], benchmarks: dict[str, str], methods: list[str], seed: int,
                rounds: int, provenance: dict, held_out: list[str] = (), held_out_size: int | None = None) -> None:
    """results/paper/wdh/table20.{csv,md}: per backbone, debate method and column of ``datasets``, the R0
    proposal hit, R0 vote, final accuracy and lift over the own R0 vote (the headroom table's flags,
    lmad.stages.paper.headroom_frame), on the held-out questions when the run has a society split."""
    from .paper import headroom_frame

    rows_methods = wdh.debate_rows(methods)
    frame = headroom_frame(questions, [p for p in proposals if layout.parse(p).dataset in datasets],
                           [p for p in judgments if layout.parse(p).dataset in datasets], rows_methods,
                           [p for p in rounds0 if layout.parse(p).dataset in datasets], list(held_out))
    cells = {(r["backbone"], r["method"], r["dataset"]): r for r in frame.to_dicts()
             if r["dataset"] in datasets} if not frame.is_empty() else {}
    seeds = {b: s if (s := layout.replicate_of(b)) is not None else seed for b in backbones}
    rows = wdh.table20_rows(cells, backbones, rows_methods, datasets, seeds, _construction(list(held_out), datasets))
    _write_csv(csv, rows, wdh.TABLE20_COLUMNS)
    run_seeds = [seeds[b] for b in backbones]
    if not rows:
        write_text(md, wdh.table20_title(run_seeds, rounds) + "**No debate method in this run: nothing to report.**\n")
        return
    write_text(md, wdh.table20_title(run_seeds, rounds) + wdh.table20_markdown(rows, datasets, benchmarks)
               + wdh.table20_caption(datasets, rounds, bool(held_out), held_out_size, run_seeds))
    log.info("When Debate Helps Table 20: %d rows over %d column(s), seed(s) %s", len(rows), len(datasets), run_seeds)
