"""The process metrics' planning (rules in rules.smk): the judge's rubric scores per backbone,
its validation and the table."""
from __future__ import annotations

from lmad import layout


def enabled(config: dict) -> bool:
    return bool(config["process"]["rubric"])


class Planner:
    def __init__(self, plan):
        self.plan = plan

    def outputs(self) -> list[str]:
        """The table, where the run has a debating method to score."""
        if not (self.plan.debate_methods or self.plan.lmad_methods):
            return []
        return [layout.paper(f"process.{ext}") for ext in ("csv", "md")]

    def model_rules(self) -> dict[str, list[str]]:
        return dict.fromkeys(("process_scores", "rubric_validation"), [self.plan.judge])

    def table_inputs(self, wildcards) -> dict:
        """Every backbone's rubric scores, every debate round's answers and every LMAD generation."""
        plan = self.plan
        inputs = {"scores": [layout.disagreement(b, "process_scores.parquet") for b in plan.backbones],
                  "rounds": plan.debate.every_round(plan.backbones, plan.datasets)}
        if plan.lmad_methods:
            inputs["lmad_generate"] = [t for b in plan.backbones
                                       for t in plan.lmad.every_iteration(b, plan.datasets, "generate", method_first=False)]
        if plan.config["process"]["battery_questions"]:
            inputs["rubric_validation"] = [self.rubric_validation_file("validation.parquet")]
        return inputs

    def rubric_validation_file(self, name: str) -> str:
        """A file of the rubric judge's validation (the run's judge model)."""
        return layout.judge_validation(self.plan.judge, f"rubric_{name}")
