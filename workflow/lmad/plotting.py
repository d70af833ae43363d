"""Figures: pyplot on the Agg backend, and the one way a figure is written — atomically
(lmad.atomic.save_figure), as a PNG at 150 dpi and optionally a PDF, then closed. matplotlib
is imported on the first call, never at import: stage modules stay light (tests/test_job_imports.py)."""
from __future__ import annotations

import os

from .atomic import save_figure

#: the paper figures' look: 8 pt type; a fixed SVG hash salt and PDF compression (same bytes each run)
PAPER_STYLE = {"svg.hashsalt": "lmad", "pdf.compression": 6, "font.size": 8}


def pyplot(paper_style: bool = True):
    """``matplotlib.pyplot`` on Agg; ``paper_style``: with :data:`PAPER_STYLE` (the per-run
    analysis figure and the layer-D probe figure are drawn in matplotlib's defaults)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if paper_style:
        plt.rcParams.update(PAPER_STYLE)
    return plt


def save(fig, png: str | os.PathLike, pdf: str | os.PathLike | None = None, title: str | None = None,
         deterministic: bool = True, subject: str | None = None) -> None:
    """Write ``fig`` to ``png`` (150 dpi) and, when given, ``pdf``, then close it. ``title``
    (and ``subject``, PDF only) go into the files' metadata; ``deterministic``: without the
    matplotlib version (PNG) and the creator, producer and creation date (PDF), so the same
    figure is the same bytes on every run."""
    titled = {"Title": title} if title is not None else {}
    save_figure(fig, png, dpi=150, metadata=titled | ({"Software": None} if deterministic else {}))
    if pdf is not None:
        about = titled | ({"Subject": subject} if subject is not None else {})
        save_figure(fig, pdf, metadata=about | ({"Creator": None, "Producer": None, "CreationDate": None}
                                                if deterministic else {}))
    pyplot(paper_style=False).close(fig)
