"""Atomic writes: a temporary file beside the target, renamed onto it only once complete, so a
killed job never leaves a half-written file that looks finished."""
from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import polars as pl


@contextmanager
def replacing(path: str | os.PathLike) -> Iterator[Path]:
    """A temporary path to write; it replaces ``path`` when the block finishes without error.
    The name is fixed (``.{name}.tmp`` beside it): one job owns each output, and a leftover
    from a killed job is simply overwritten."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        if tmp.is_file():
            tmp.unlink()


def write_text(path: str | os.PathLike, text: str) -> None:
    with replacing(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def write_csv(path: str | os.PathLike, frame: pl.DataFrame) -> None:
    with replacing(path) as tmp:
        frame.write_csv(tmp)


def save_figure(fig, path: str | os.PathLike, **savefig) -> None:
    """``fig.savefig`` to ``path`` atomically (the format comes from ``path``'s extension)."""
    with replacing(path) as tmp:
        fig.savefig(tmp, format=Path(path).suffix.lstrip("."), **savefig)
