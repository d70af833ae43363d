"""TrueMAD's own tables (rule paper_truemad, results/paper/truemad/): Table 1 (Agent ACC and Vote ACC
per benchmark and their average, mean ± sample SD over the config's seeds, each benchmark pooled over
its datasets), Tables 4–6 (round-wise Agent ACC) and Tables 7–9 (last-round Agent ACC by R1 correctness
composition), from the debate round tables (lmad.paper.truemad)."""
from __future__ import annotations

import logging

from ..atomic import write_text
from ..paper import label
from ..paper import truemad as tm
from .paper import _write_csv

log = logging.getLogger(__name__)

TABLE1_COLUMNS = ["backbone", "method", "benchmark", "questions", "seeds", "agent_acc", "agent_acc_sd", "vote_acc",
                  "vote_acc_sd"]
ROUND_COLUMNS = ["backbone", "benchmark", "method", "round", "seeds", "agent_acc", "agent_acc_sd", "vote_acc",
                 "vote_acc_sd"]
COMPOSITION_COLUMNS = ["backbone", "benchmark", "method", "group", "seeds", "questions_mean", "questions_min",
                       "questions_max", "agent_acc", "agent_acc_sd"]

CAPTION = ("\nAgent ACC = mean accuracy of the individual agents' final answers; Vote ACC = strict-majority vote "
           "accuracy: more than half of the agents give one answer and it is right, and no strict majority (a tie "
           "or a scatter) counts as wrong (TrueMAD §4.2). Correctness is each question's answer type's own rule "
           "(equivalence of numbers, option letters). A benchmark pools the questions of its datasets (AIME: one "
           "benchmark of its configured copies, not one entry per copy); Avg. is the mean over the benchmarks, per "
           "seed, then over seeds. Bold: the highest mean in each column. The TrueMAD summary gives no Table 1 "
           "cells to compare with, only the averaged gains below.\n")

COMPOSITION_CAPTION = ("\nEach method's questions grouped by how many of its agents were right at R1 (its own round 0): "
                       "wrong majority (fewer than half), even split (exactly half), correct majority (more than half), "
                       "and difficult = wrong majority ∪ even split (TrueMAD §B.2); the cell is the agents' accuracy at "
                       "the last round within the group, pooled over a benchmark's datasets, mean ± sample SD over the "
                       "seeds that have the group (one seed: n/a; none: –). Bold: the highest mean in each column. The "
                       "TrueMAD summary gives no cells of these tables.\n")


def truemad_tables(questions: list[str], rounds: list[str], table1_csv: str, table1_md: str, rounds_csv: str,
                   rounds_md: str, compositions_csv: str, compositions_md: str, benchmarks: dict[str, str],
                   methods: list[str], provenance: dict) -> None:
    from ..paper.dynamics import correctness_by_round
    from ..paper.figures import group_rounds
    from .units import read_golds

    golds = read_golds(questions)
    scores = {key: correctness_by_round(golds, paths) for key, paths in group_rounds(rounds).items()}
    cells = tm.runs_by_cell(scores, benchmarks)
    order = tm.benchmark_order(benchmarks)
    rows = tm.table1_rows(cells, order, methods)
    _write_csv(table1_csv, rows, TABLE1_COLUMNS)
    per_round = tm.round_rows(cells, order, methods)
    _write_csv(rounds_csv, per_round, ROUND_COLUMNS)
    by_group = tm.composition_rows(cells, order, methods)
    _write_csv(compositions_csv, by_group, COMPOSITION_COLUMNS)
    if not rows:
        for path, title in ((table1_md, "Table 1"), (rounds_md, "Tables 4–6"), (compositions_md, "Tables 7–9")):
            write_text(path, f"# TrueMAD {title}\n\n**No debate method in this run: nothing to report.**\n")
        return
    write_text(table1_md, "# TrueMAD Table 1: Agent ACC and Vote ACC (%)\n\n" + tm.table1_markdown(rows, order, label)
               + CAPTION + tm.gains_markdown(rows, label))
    write_text(rounds_md, "# TrueMAD Tables 4–6: round-wise Agent ACC (%)\n\n" + tm.rounds_markdown(per_round, order, label)
               + "\nAgent ACC (%) per response round, R1 = the first (round 0 here); mean ± sample SD over the seeds "
                 "(one seed: n/a). Bold: the highest mean in each round. Vote ACC per round is in the CSV.\n")
    write_text(compositions_md, "# TrueMAD Tables 7–9: Agent ACC (%) at the last round by R1 correctness composition\n\n"
               + tm.compositions_markdown(by_group, order, label) + COMPOSITION_CAPTION)
    log.info("TrueMAD Table 1: %d rows, Tables 4-6: %d rows, Tables 7-9: %d rows", len(rows), len(per_round),
             len(by_group))


PROCESS_COLUMNS = ["backbone", "method", "benchmark", "questions", "seeds", "k", "replies", "scored", "rubric_status",
                   *(c for m in tm.PROCESS_METRICS for c in (m, f"{m}_sd", f"{m}_seeds")), "cpl_inf"]

PROCESS_CAPTION = (
    "\nTable 10: RP / EI / NC, the mean rubric score (1–10) of the scored debate replies (rounds after R1) of "
    "a benchmark, per seed, by the rubric judge of the process study (config process.rubric; "
    "lmad.studies.process, docs/studies.md \"Process metrics\"), shown only when that judge passed its "
    "known-answer battery. Table 11: CPL (correction rate over corruption rate of the agents' answers "
    "between consecutive rounds, unitless), AME (P(final majority right | R1 wrong majority) − P(final "
    "majority wrong | R1 correct majority), points) and CMP1v(K−1) (P(final majority right | exactly one "
    "of the K agents right at R1), %), lmad.paper.dynamics' definitions. A benchmark pools the questions "
    "and replies of its datasets (AIME: its configured copies are one benchmark); every cell is the mean ± "
    "sample SD over the seeds where it is defined (one seed: n/a; a CPL that is infinite in a seed is left "
    "out and counted). Bold: the highest mean in each column. Higher is better for all six. The TrueMAD "
    "summary gives no cell of these tables except the AIME CPL of four methods (§4.3): {published}.\n")


def truemad_process_tables(questions: list[str], rounds: list[str], csv: str, md: str, benchmarks: dict[str, str],
                           methods: list[str], provenance: dict, scores: list[str] = (),
                           validation: str | None = None, rubric_validation: list[str] | None = None) -> None:
    """results/paper/truemad/tables10-11.{csv,md}: TrueMAD's Tables 10 (RP / EI / NC) and 11 (CPL / AME /
    CMP1v3) per backbone, method and benchmark, mean ± sample SD over the seeds. ``scores``: the process
    study's rubric scores of every run (none while config process.rubric is off)."""
    from .. import layout
    from ..number_format import fmt
    from ..paper.dynamics import correctness_by_round
    from ..paper.figures import group_rounds
    from ..schemas import read_table
    from ..studies.process.stages import rubric_status
    from .units import read_golds

    golds = read_golds(questions)
    per_q = {key: correctness_by_round(golds, paths) for key, paths in group_rounds(rounds).items()}
    replies: dict[tuple[str, str, str], list[dict]] = {}
    for path in scores:
        run = layout.parse(path).backbone
        for r in read_table("process_scores", path).to_dicts():
            replies.setdefault((run, r["dataset"], r["method"]), []).append(r)
    if scores:
        status, note = rubric_status(validation, rubric_validation)
    else:
        status, note = "not run", ("> **RP / EI / NC are not shown:** config process.rubric is off, so no rubric "
                                   "judge scored the replies; Table 11 needs no judge.")
    shown = status == "PASSED"
    cells = tm.process_cells(per_q, replies, benchmarks)
    order = tm.benchmark_order(benchmarks)
    rows = [{c: {**r, "rubric_status": status}[c] for c in PROCESS_COLUMNS}
            for r in tm.process_rows(cells, order, methods, shown)]
    _write_csv(csv, rows, PROCESS_COLUMNS)
    if not rows:
        write_text(md, "# TrueMAD Tables 10–11\n\n**No debate method in this run: nothing to report.**\n")
        return
    published = ", ".join(f"{label(m)} {fmt(v)}" for m, v in tm.PUBLISHED_CPL_AIME.items())
    write_text(md, "# TrueMAD Tables 10–11: process-level scores\n\n"
               + tm.process_markdown(rows, order, label, 10, note) + "\n" + tm.process_markdown(rows, order, label, 11)
               + PROCESS_CAPTION.format(published=published)
               + tm.deltas_markdown(tm.matched_deltas(rows), order, label, shown))
    log.info("TrueMAD Tables 10-11: %d rows (rubric %s)", len(rows), status)
