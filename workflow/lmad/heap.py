"""The garbage collector of the pipeline's own processes: Snakemake's command line (rules/common.smk
settles it as the parse begins), the warm worker before it forks its jobs, and a job that runs in
its own process.

Why: a stage allocates millions of short-lived objects (requests, rows, parsed replies), and each
full collection walked every object the imports left behind as well: polars, Snakemake, every
stage module. Measured on 2 cores at 4 × 500 questions (docs/benchmarks.md): collection took 12–26 %
of an LMAD chain job's time, and 0.23 s of Snakemake's ~2 s no-op rerun. Frozen objects are never
scanned again, so a forked job neither pays for them nor writes to their pages (Python's docs on
``gc.freeze`` advise it before a fork); a larger first threshold collects the young generation
every 10,000 allocations instead of every 700. Nothing is left uncollected that reference counting
frees, which is nearly everything a stage allocates.
"""
from __future__ import annotations

import gc
from pathlib import Path

THRESHOLD = (10_000, 10, 10)


def settle() -> None:
    """Freeze every object alive now and collect less often (above)."""
    gc.freeze()
    gc.set_threshold(*THRESHOLD)


def snakemake_command(argv: list[str]) -> bool:
    """This process is Snakemake's command line (``snakemake``, ``python -m snakemake``), which
    ends with its run, rather than a program that calls Snakemake's API and lives on: a frozen
    object that later becomes cyclic garbage is never collected, so only a process about to end
    may freeze what it did not allocate itself."""
    if not argv:
        return False
    path = Path(argv[0])
    return path.name == "snakemake" or (path.name == "__main__.py" and path.parent.name == "snakemake")
