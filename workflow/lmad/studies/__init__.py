"""The optional studies, each a folder ``lmad/studies/<name>/``: its rules (``rules.smk``), its
planning (``plan.py``), its stage functions (``stages.py``) and its library. The run's plan
(lmad.plan) asks each study for the outputs it adds to ``rule all``; the Snakefile includes every
study's rules. Adding a study: its folder, a line in STUDIES and its row in docs/layout.md.

A study's ``plan.py`` holds ``enabled(config)`` (whether the config turns it on) and ``Planner``,
built from the run's plan: its rules' input functions, ``outputs()`` (its targets; asked only
when enabled) and ``model_rules()`` (each of its rules that calls a model, with the models it
may call: lmad.plan serves them like the core's); optionally ``check_config(config)``, which
lmad.config_checks runs before any job.

This module stays light: a stage job imports its study's package, and so this module, too.
"""
from __future__ import annotations

import importlib
from pathlib import Path

#: every study, in the order the Snakefile includes its rules
STUDIES = (
    "finalizers",  # finalizers on every saved round, and their readout (When Debate Helps)
    "disagreement",  # the disagreement layers A-D (the layered-disagreement paper)
    "process",  # the process metrics (TrueMAD)
    "jury",  # the swap-checked pairwise jury
    "opinion",  # opinion questions' table instead of accuracy
)

FOLDER = Path(__file__).parent


def planning(name: str):
    """The study's ``plan`` module (imported here, so the library's import layers need not know it)."""
    return importlib.import_module(f"{__name__}.{name}.plan")


def rules_file(name: str) -> str:
    return str(FOLDER / name / "rules.smk")


def stage_modules() -> list[str]:
    """Every study's stage modules (``stages.py``, ``*_stages.py``), for the warm worker to preload."""
    return [f"{__name__}.{name}.{path.stem}" for name in STUDIES for path in sorted((FOLDER / name).glob("*.py"))
            if path.stem == "stages" or path.stem.endswith("_stages")]
