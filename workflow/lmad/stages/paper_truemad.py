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
