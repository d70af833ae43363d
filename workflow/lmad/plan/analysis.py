"""The judge's and the analysis' tables: every method's predictions, dataset after dataset; the
judge's validation; the replicates; the costs by model."""
from __future__ import annotations

from .. import committees, layout
from ..registry import METHODS


class AnalysisPlan:
    """Analysis tables of a run's plan (``plan.analysis``): the run's scope, and any other
    axis' tables, come from ``plan`` (lmad.plan.Plan)."""

    def __init__(self, plan):
        self.plan = plan

    def predictions_of(self, backbone: str, dataset: str) -> list[str]:
        return [layout.predictions(backbone, dataset, m) for m in self.plan.methods]

    def backbone_predictions(self, wildcards) -> list[str]:
        return [p for d in self.plan.datasets for p in self.predictions_of(wildcards.backbone, d)]

    def backbone_judgments(self, wildcards) -> list[str]:
        return [layout.judgments(wildcards.backbone, d) for d in self.plan.datasets]

    def judge_validation_file(self, name: str = "validation.parquet") -> str:
        """A file of the run's judge validation (one judge model per run; rules/judge.smk)."""
        return layout.judge_validation(self.plan.judge, name)

    def replicate_accuracies(self, wildcards) -> list[str]:
        return [layout.analysis(layout.run_name(wildcards.model, s), "accuracy.parquet") for s in self.plan.seeds]

    def run_scope(self, *keys: str) -> dict:
        """Params that name the run's scope, for stage functions that take them: ``metric`` (the
        headline), ``backbones``, ``datasets``, ``methods`` (config order)."""
        plan = self.plan
        scope = {"metric": plan.config["analysis"]["metric"], "backbones": plan.backbones, "datasets": plan.datasets,
                 "methods": plan.methods}
        return {key: scope[key] for key in keys}

    def cost_call_tables(self, wildcards) -> list[str]:
        """Every table of calls the backbone's predictions cost: a single-round method's samples, each
        debate round's answers and steps, each LMAD trace (its call log), dataset after dataset."""
        b, out = wildcards.backbone, []
        for d in self.plan.datasets:
            for m in self.plan.methods:
                family = METHODS[m].family
                if family == "single":
                    out.append(layout.samples(b, d, METHODS[m].samples))
                elif family == "debate":
                    out += [layout.debate_round(b, d, m, t, part) for t in self.plan.debate.rounds_of(m)
                            for part in ("", "_steps")]
                else:
                    out.append(layout.lmad_trace(b, d, m))
        return list(dict.fromkeys(out))

    def cost_models(self, backbone: str) -> dict:
        """Params: the model of each agent index (``members``) and of each role of no agent (lmad.committees)."""
        name = layout.model_of(backbone)
        if committees.is_committee(self.plan.config, name):
            return {"members": [m["model"] for m in committees.members_of(self.plan.config, name)],
                    "roles": committees.roles_of(self.plan.config, name)}
        return {"members": [name], "roles": dict.fromkeys(committees.ROLES, name)}
