"""The opinion table's planning (rule opinion_table in rules.smk): one table per backbone."""
from __future__ import annotations

from lmad import layout
from lmad.data import ANSWER_TYPE
from lmad.data.loaders import dataset_type


def opinion_datasets(config: dict) -> list[str]:
    return [d for d, spec in config["datasets"].items() if ANSWER_TYPE[dataset_type(d, spec)] == "opinion"]


def enabled(config: dict) -> bool:
    return bool(opinion_datasets(config))


class Planner:
    def __init__(self, plan):
        self.plan = plan
        self.datasets = opinion_datasets(plan.config)

    def outputs(self) -> list[str]:
        return [layout.analysis(b, f"opinion.{ext}") for b in self.plan.backbones for ext in ("parquet", "md")]

    def model_rules(self) -> dict[str, list[str]]:
        return {}

    def round_units(self) -> list[list]:
        """[dataset, method, round] of every answer table rule opinion_table reads: the rounds of the
        methods with several agents or samples (the finalizers' methods), rounds in order."""
        return self.plan.rounds.units(self.datasets, self.plan.rounds.finalizer_methods())

    def prediction_units(self) -> list[list[str]]:
        rounds = set(self.plan.rounds.finalizer_methods())
        return [[d, m] for d in self.datasets for m in self.plan.methods if m not in rounds]

    def inputs(self, wildcards) -> dict:
        plan, b = self.plan, wildcards.backbone
        return {"questions": [plan.questions.path(b, d) for d in self.datasets],
                "rounds": [plan.rounds.answers(b, d, m, t) for d, m, t in self.round_units()],
                "predictions": [layout.predictions(b, d, m) for d, m in self.prediction_units()]}
