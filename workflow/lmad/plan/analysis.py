"""The judge's and the analysis' tables: every method's predictions, dataset after dataset; the
judge's validation; the replicates; the costs by model."""
from __future__ import annotations

from .. import committees, layout
from ..registry import METHODS


class AnalysisPlanning:
    """Analysis tables of a run's plan (mixed into lmad.plan.Plan, whose attributes they read)."""

    def predictions_of(self, backbone: str, dataset: str) -> list[str]:
        return [layout.predictions(backbone, dataset, m) for m in self.methods]

    def backbone_predictions(self, wildcards) -> list[str]:
        return [p for d in self.datasets for p in self.predictions_of(wildcards.backbone, d)]

    def backbone_judgments(self, wildcards) -> list[str]:
        return [layout.judgments(wildcards.backbone, d) for d in self.datasets]

    def judge_validation_file(self, name: str = "validation.parquet") -> str:
        """A file of the run's judge validation (one judge model per run; rules/judge.smk)."""
        return layout.judge_validation(self.judge, name)

    def replicate_accuracies(self, wildcards) -> list[str]:
        return [layout.analysis(layout.run_name(wildcards.model, s), "accuracy.parquet") for s in self.seeds]

    def run_scope(self, *keys: str) -> dict:
        """Params that name the run's scope, for stage functions that take them: ``metric`` (the
        headline), ``backbones``, ``datasets``, ``methods`` (config order)."""
        scope = {"metric": self.config["analysis"]["metric"], "backbones": self.backbones, "datasets": self.datasets,
                 "methods": self.methods}
        return {key: scope[key] for key in keys}

    def cost_call_tables(self, wildcards) -> list[str]:
        """Every table of calls the backbone's predictions cost: a single-round method's samples, each
        debate round's answers and steps, each LMAD trace (its call log), dataset after dataset."""
        b, out = wildcards.backbone, []
        for d in self.datasets:
            for m in self.methods:
                family = METHODS[m].family
                if family == "single":
                    out.append(layout.samples(b, d, METHODS[m].samples))
                elif family == "debate":
                    out += [layout.debate_round(b, d, m, t, part) for t in self.rounds_of(m) for part in ("", "_steps")]
                else:
                    out.append(layout.lmad_trace(b, d, m))
        return list(dict.fromkeys(out))

    def cost_models(self, backbone: str) -> dict:
        """Params: the model of each agent index (``members``) and of each role of no agent (lmad.committees)."""
        name = layout.model_of(backbone)
        if committees.is_committee(self.config, name):
            return {"members": [m["model"] for m in committees.members_of(self.config, name)],
                    "roles": committees.roles_of(self.config, name)}
        return {"members": [name], "roles": dict.fromkeys(committees.ROLES, name)}
