"""The pairwise jury's planning (rules in rules.smk): one verdicts table per backbone and juror."""
from __future__ import annotations

from lmad import layout


def enabled(config: dict) -> bool:
    return bool(config["jury"]["pair"])


class Planner:
    def __init__(self, plan):
        self.plan = plan
        self.config = plan.config["jury"]
        self.jurors = self.config["judges"] or [plan.judge]

    def outputs(self) -> list[str]:
        return [layout.paper(f"jury.{ext}") for ext in ("csv", "md")]

    def model_rules(self) -> dict[str, list[str]]:
        return {"jury": self.jurors}

    def predictions(self, wildcards) -> list[str]:
        """The final answers of the jury's two methods on every dataset of one backbone."""
        return [layout.predictions(wildcards.backbone, d, m) for d in self.plan.datasets for m in self.config["pair"]]

    def verdict_tables(self, wildcards=None) -> list[str]:
        return [layout.disagreement(b, f"jury_{j}.parquet") for b in self.plan.backbones for j in self.jurors]
