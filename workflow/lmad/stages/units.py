"""Stage jobs that serve several datasets (or LMAD (dataset, method) units) in one batch:
every path argument is a list aligned with the units, and rows of the batch go back to
the unit that asked for them."""
from __future__ import annotations

from .. import layout
from ..answers import Gold, golds_of
from ..schemas import read_table


def check_aligned(stage: str, n: int, **paths: list[str] | None) -> None:
    """Every given path list has one entry per unit."""
    for name, value in paths.items():
        if value is not None and len(value) != n:
            raise ValueError(f"{stage}: {len(value)} {name} paths for {n} units")


def check_unit_paths(stage: str, units: list[tuple[str, str]], **paths: list[str] | None) -> None:
    """Every path of the results layout names its unit's dataset (or a shard of it) and, for a
    method's own tables, its method: lists aligned by position fail here, not by mixing rows."""
    for name, value in paths.items():
        for (dataset, method), path in zip(units, value or []):
            if not layout.in_results(path):  # a test's own files: nothing to check
                continue
            at = layout.parse(path)
            if layout.configured_dataset(at.dataset) != dataset or at.method not in (None, method):
                raise ValueError(f"{stage}: {name} path {path} is not of unit ({dataset}, {method})")


def split_rows(n: int, owners: list[int], rows: list[dict]) -> list[list[dict]]:
    """Rows of one batch back to their units (``owners[i]`` is row i's unit)."""
    out: list[list[dict]] = [[] for _ in range(n)]
    for u, row in zip(owners, rows, strict=True):
        out[u].append(row)
    return out


def per_unit(stage: str, n: int, paths: list[str]) -> list[list[str]]:
    """A flat path list of ``n`` units with the same number of consecutive entries each
    (a method's rounds or iterations, dataset after dataset) as one list per unit."""
    if n == 0 or len(paths) % n:
        raise ValueError(f"{stage}: {len(paths)} paths do not split evenly over {n} units")
    k = len(paths) // n
    return [paths[u * k:(u + 1) * k] for u in range(n)]


def by_method(stage: str, methods: list[str], counts: list[int], paths: list[str]) -> list[list[str]]:
    """A flat path list of a job that serves several methods, method after method, split into
    one list per method (``counts[i]`` entries for ``methods[i]``)."""
    if len(counts) != len(methods) or sum(counts) != len(paths):
        raise ValueError(f"{stage}: {len(paths)} paths for methods {methods} expecting {counts} each")
    out, start = [], 0
    for k in counts:
        out.append(paths[start:start + k])
        start += k
    return out


def read_golds(questions: list[str]) -> dict[tuple[str, str], Gold]:
    """{(dataset, qid): Gold} of every question of these ``questions`` tables: the answer, its
    aliases, and how answers are compared with them (``answers.gold_correct``)."""
    return golds_of(r for p in questions for r in read_table("questions", p).to_dicts())
