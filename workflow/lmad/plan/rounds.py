"""Every saved round of a method (a debate round, an LMAD iteration, SC's one): what the finalizers
and the opinion table read."""
from __future__ import annotations

from .. import layout
from ..registry import METHODS


class RoundPlan:
    """Round tables of a run's plan (``plan.rounds``): the run's scope, and any other
    axis' tables, come from ``plan`` (lmad.plan.Plan)."""

    def __init__(self, plan):
        self.plan = plan

    def finalizer_methods(self) -> list[str]:
        """Methods whose rounds are finalized, config order: every debate and LMAD method, and every
        voting method (SC: its one round, the shared proposals; sc-matched: its samples)."""
        return [m for m in self.plan.methods
                if METHODS[m].family in ("debate", "lmad") or METHODS[m].samples not in (None, "cot")]

    def saved(self, method: str) -> int:
        """How many answer tables a method saves: R + 1 debate rounds, L LMAD iterations, SC's one."""
        family = METHODS[method].family
        if family == "debate":
            return self.plan.debate.setting(method).rounds + 1
        return self.plan.config["lmad"]["iterations"] if family == "lmad" else 1

    @staticmethod
    def answers(backbone: str, dataset: str, method: str, t: int) -> str:
        """The answer table of round t of a method (lmad.layout)."""
        family = METHODS[method].family
        if family == "debate":
            return layout.debate_round(backbone, dataset, method, t)
        if family == "lmad":
            return layout.lmad_table(backbone, dataset, method, t, "generate")
        return layout.samples(backbone, dataset, METHODS[method].samples)

    def units(self, datasets, methods) -> list[list]:
        """[dataset, method, round] of every answer table of ``methods`` on ``datasets``, rounds in order."""
        return [[d, m, t] for d in datasets for m in methods for t in range(self.saved(m))]
