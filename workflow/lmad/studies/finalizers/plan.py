"""The finalizers' planning (rules in rules.smk): one finalizers job per backbone over every saved
round, and the readout tables."""
from __future__ import annotations

from lmad import layout


def enabled(config: dict) -> bool:
    return bool(config["finalizers"]["enabled"])


class Planner:
    def __init__(self, plan):
        self.plan = plan
        self.config = plan.config["finalizers"]

    def outputs(self) -> list[str]:
        return [self.plan.paper.wdh_born(f"{name}.{ext}") for name in ("readout", "headroom_lift")
                for ext in ("csv", "md", "png")]

    def model_rules(self) -> dict[str, list[str]]:
        return {"finalizers": self.plan.config["backbones"]}

    def round_units(self) -> list[list]:
        """[dataset, method, round] of every answer table a finalizers job reads, in input order."""
        return self.plan.rounds.units(self.plan.datasets, self.plan.rounds.finalizer_methods())

    def rounds(self, wildcards) -> list[str]:
        return [self.plan.rounds.answers(wildcards.backbone, d, m, t) for d, m, t in self.round_units()]

    def finalized_tables(self, wildcards=None) -> list[str]:
        return [layout.finalized(b, d) for b in self.plan.backbones for d in self.plan.datasets]
