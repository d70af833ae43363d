"""The disagreement layers' planning (rules in rules.smk): layer B's validation and labels, layers A
and C on LMAD's local debate, layer D's probe, and their tables. Layer A on the debate baselines
is asked inside rule debate_round (lmad.plan: its prompts and params)."""
from __future__ import annotations

from lmad import layout


def check_config(config: dict) -> None:
    """Layer D needs backbones whose backend gives next-token log-probabilities."""
    if (config.get("disagreement") or {}).get("probe"):
        from lmad.studies.disagreement.probe import unprobeable

        for name in config["backbones"]:
            why = unprobeable(name, config["models"][name])
            if why:
                raise ValueError(f"config disagreement.probe: {why}")


def enabled(config: dict) -> bool:
    layers = config["disagreement"]
    return bool(layers["self_report"] or layers["pushback"] or layers["probe"])


class Planner:
    def __init__(self, plan):
        self.plan = plan
        self.config = plan.config["disagreement"]

    def on(self) -> bool:
        """Whether the disagreement table is built: layer A or B is on and the run has a debating method."""
        debating = bool(self.plan.debate_methods or self.plan.lmad_methods)
        return debating and bool(self.config["self_report"] or self.config["pushback"])

    def outputs(self) -> list[str]:
        out = [layout.paper(f"disagreement.{ext}") for ext in ("csv", "md")] if self.on() else []
        probe = [layout.paper(f"probe.{ext}") for ext in ("csv", "md", "png")] if self.config["probe"] else []
        return out + probe

    def model_rules(self) -> dict[str, list[str]]:
        judge, backbones = [self.plan.judge], self.plan.config["backbones"]
        return {"pushback_validation": judge, "pushback": judge, "lmad_self_report": backbones, "probe": backbones}

    def pushback_validation_file(self, name: str) -> str:
        """A file of layer B's validation (the run's judge model)."""
        return layout.judge_validation(self.plan.judge, f"pushback_{name}")

    def table_inputs(self, wildcards) -> dict:
        """The disagreement table's inputs: the rounds' steps (layer A) when self-reports are on; the
        pushback labels of every backbone and the judge's validation when layer B is on."""
        plan = self.plan
        inputs = {"steps": [], "labels": [], "validation": []}
        if self.config["self_report"]:
            inputs["steps"] = plan.debate.every_round(plan.backbones, plan.datasets, "_steps", first=1)
        if self.config["self_report"] and plan.lmad_methods:
            inputs["lmad_reports"] = [layout.disagreement(b, "lmad_self_report.parquet") for b in plan.backbones]
        if self.config["pushback"]:
            inputs["labels"] = [layout.disagreement(b, "pushback.parquet") for b in plan.backbones]
            inputs["validation"] = [self.pushback_validation_file("validation.parquet")]
        return inputs

    def probe_reads(self) -> list[str]:
        return [layout.disagreement(b, "probe.parquet") for b in self.plan.backbones]
