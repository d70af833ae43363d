"""What an LMAD stage job (lmad.stages.localized_debate) reads: its (dataset, method) units and
their questions tables, the state and committed premises entering an iteration, per-agent rows
by question."""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping

import polars as pl

from ..protocols.localized_debate import controller
from ..schemas import read_table, read_unit_frames, read_units, write_units
from .units import check_aligned, check_unit_paths


class QuestionTable(Mapping):
    """A questions table by qid, each row made a dict the first time it is asked for: a stage
    of a later iteration touches only the questions still active (a whole table's dicts cost
    as much as reading it, in each of a run's LMAD stage jobs, which are its longest path)."""

    def __init__(self, path: str):
        self._frame = read_table("questions", path)
        self._index = {qid: i for i, qid in enumerate(self._frame["qid"].to_list())}
        self._rows: dict[str, dict] = {}

    def __getitem__(self, qid: str) -> dict:
        row = self._rows.get(qid)
        if row is None:
            row = self._rows[qid] = self._frame.row(self._index[qid], named=True)
        return row

    def __iter__(self):
        return iter(self._index)

    def __len__(self) -> int:
        return len(self._index)


def questions_by_qid(path: str) -> Mapping[str, dict]:
    return QuestionTable(path)


class Units:
    """The (dataset, method) units of one stage job and their question tables."""

    def __init__(self, units: list, questions: list[str], **aligned: list[str] | None):
        self.names = [tuple(u) for u in units]
        check_aligned("lmad", len(self.names), questions=questions, **aligned)
        check_unit_paths("lmad", self.names, questions=questions, **aligned)
        loaded: dict[str, dict] = {}
        for path in questions:
            if path not in loaded:
                loaded[path] = questions_by_qid(path)
        self.questions = [loaded[path] for path in questions]

    def __len__(self) -> int:
        return len(self.names)

    def rows(self, name: str, path: str | None) -> list[list[dict] | None]:
        """Each unit's rows of table ``name`` in an iteration's file of every unit (lmad.schemas.read_units);
        None for each unit where there is no file (the state entering iteration 0)."""
        return read_units(name, path, self.names) if path else [None] * len(self.names)

    def committed(self, state: str | None) -> list[dict[str, list[str]]]:
        """Each unit's P per question entering this iteration (empty for every question at
        iteration 0, ``state`` None), from the state file's qid and committed columns alone: the
        stages that read only P (localize, debate, resolve) skip making a dict of every state row
        of every question, stopped ones included (~12,000 rows a stage at 4 x 500 questions)."""
        if not state:
            return [defaultdict(list) for _ in self.names]
        return [defaultdict(list, zip(f["qid"].to_list(), f["committed"].to_list()))
                for f in read_unit_frames("lmad_state", state, self.names)]

    def state(self, state: str | None) -> list[tuple[list[dict], pl.DataFrame | None]]:
        """Each unit's state entering this iteration as (its active questions' rows, its stopped
        questions' rows as a frame): the initial state (every question active, no frame) at
        iteration 0 (``state`` None). A stopped question's row only passes through to the next
        state, so it stays a frame: by the last iterations nearly every question has stopped
        (12,000 rows a stage at 4 x 500 questions, a few hundred active). A unit whose rows are
        not one per question of its questions table fails."""
        if not state:
            return [(controller.initial_state(sorted(qs)), None) for qs in self.questions]
        out = []
        for (dataset, method), qs, frame in zip(self.names, self.questions,
                                                 read_unit_frames("lmad_state", state, self.names)):
            qids = frame["qid"]
            if qids.n_unique() != frame.height or set(qids.to_list()) != set(qs):
                raise ValueError(f"lmad: the state entering this iteration has {frame.height} rows for "
                                 f"{len(qs)} questions of {dataset}/{method}")
            active = frame["active"].fill_null(False)
            out.append((frame.filter(active).to_dicts(), frame.filter(~active)))
        return out

    def write(self, name: str, per_unit: list[list[dict] | pl.DataFrame], path: str, provenance: dict) -> None:
        """Each unit's rows (dicts or a frame of the table's columns; in unit order) as the
        iteration's one file of table ``name``."""
        check_aligned("lmad", len(self.names), **{name: per_unit})
        write_units(name, [(d, m, rows) for (d, m), rows in zip(self.names, per_unit)], path, provenance)


def rows_by_qid(rows: list[dict]) -> dict[str, list[dict]]:
    """Per-agent rows grouped by question, in agent order."""
    grouped: dict[str, list[dict]] = defaultdict(list)
    for r in sorted(rows, key=lambda r: (r["qid"], r["agent"])):
        grouped[r["qid"]].append(r)
    return dict(grouped)


def table_rows(name: str, path: str) -> list[dict]:
    return read_table(name, path).to_dicts()


def cache_stats(backend) -> str:
    """The cache-stats line the run manifest counts model loads from."""
    return backend.stats() if backend else "no model calls"
