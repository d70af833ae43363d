"""``snakemake --report`` builds its report from a finished run's files; where the run has not
made them yet, Snakemake stops at the first one with "marked for report but does not exist".
The Snakefile asks :func:`missing_for_report` first, so the message says what to run."""
from __future__ import annotations

import os


def report_only(argv: list[str]) -> bool:
    """A command line that asks for the report of an earlier run (``--report-after-run`` runs first)."""
    return any(a == "--report" or a.startswith("--report=") for a in argv) and "--report-after-run" not in argv


def missing_for_report(targets: list[str]) -> str | None:
    """Why ``snakemake --report`` cannot report a run whose ``targets`` (rule all's) are not all
    made yet, and what to run first; None when they are."""
    missing = [t for t in targets if not os.path.exists(t)]
    if not missing:
        return None
    shown = ", ".join(missing[:3]) + (", …" if len(missing) > 3 else "")
    return (f"snakemake --report reports a finished run, and {len(missing)} of this run's {len(targets)} "
            f"outputs are missing ({shown}): run the workflow first with the same options (the demo: "
            f"`snakemake --cores 2`; else the same --configfile and --profile), then `snakemake --report "
            f"report.html` with them")
