"""What a model rule's stage gets and what its job asks the scheduler for: a model's spec, weights,
threads and resources, and which rules only talk to a served model."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from .. import committees, layout
from ..job_resources import model_sizing, unset_mem_mb


# The core's rules whose jobs call a model, by whose model: the backbone of the job, the judge
# (a study names its own: lmad.studies).
MODEL_RULES = {
    "backbone": ["generate", "debate_round", "lmad_generate", "lmad_extract", "lmad_localize", "lmad_debate",
                 "lmad_resolve", "sc_matched", "society_pool"],
    "judge": ["judge", "judge_validation"],
}

@dataclass(frozen=True)
class ModelRule:
    """The sections every model rule repeats, for its kind of model (MODEL_RULES), each spread into
    its section of the rule (rules/common.smk): ``input: **M.input`` (the model's converted weights,
    an order-only input: lmad.smk.DEPENDENCY_ONLY), ``params: **M.params`` (the model's spec and
    the call cache), ``threads: M.threads``, ``resources: **M.resources``."""
    input: dict[str, Any]
    params: dict[str, Any]
    threads: int | Callable[[Any], int]
    resources: dict[str, Any]

class ModelPlan:
    """Model tables of a run's plan (``plan.models``): the run's scope, and any other
    axis' tables, come from ``plan`` (lmad.plan.Plan)."""

    def __init__(self, plan):
        self.plan = plan

    def spec(self, name: str) -> dict:
        """A model's config entry (``name``: the model, or a run of it), with the converted-weights
        folder for GGUF sources; a committee's: its first member's, with the committee
        (lmad.committees.committee_param)."""
        name = layout.model_of(name)
        if committees.is_committee(self.plan.config, name):
            return committees.committee_param(self.plan.config, name, self.spec)
        models = self.plan.config["models"]
        spec = {"name": name, **models[name]}
        if "gguf" in spec:
            spec["model"] = self._converted(name)
        if spec.get("serve"):  # the server's own SLURM job is sized like an offline stage job
            spec["server_resources"] = model_sizing(models, name, served_as_client=False)
        # job sizing (resources:) is scheduling only: it never reaches the backend or params
        return {k: v for k, v in spec.items() if k not in ("gguf", "resources")}

    def of(self, name: str) -> list[str]:
        """The models a backbone's (or a run's) jobs call: a committee's every member and role model."""
        return committees.models_of(self.plan.config, layout.model_of(name))

    def agent_temperatures(self, backbone: str) -> list[float]:
        """The temperatures of a backbone's agents (the proposals, LMAD): a committee's members'."""
        return committees.agent_temperatures(self.plan.config, layout.model_of(backbone))

    def _converted(self, name: str) -> str:
        """The converted-weights folder of a GGUF model: the first model's (config order) with the same
        GGUF, so a perturbed copy of a model (``perturb:``) converts nothing twice."""
        gguf = self.plan.config["models"][name]["gguf"]
        first = next(m for m, spec in self.plan.config["models"].items() if spec.get("gguf") == gguf)
        return f"resources/models/{first}"

    def files(self, name: str) -> list[str]:
        return list(dict.fromkeys(self._converted(m) for m in self.of(name) if "gguf" in self.plan.config["models"][m]))

    def threads(self, name: str) -> int:
        def threads(spec: dict) -> int:
            return 1 if spec.get("serve") else spec.get("threads", 1)  # a served model's jobs are HTTP clients

        # a committee job runs its members' batches one after the other: the most any of them uses
        return max(threads(self.plan.config["models"][m]) for m in self.of(name))

    def sizing(self, name: str) -> dict:
        """A backbone's job resources: a committee job holds every member model, so each resource is
        the largest any member asks for (placement strings: the first member's that sets one)."""
        out: dict = {}
        for m in self.of(name):
            for key, value in model_sizing(self.plan.config["models"], m).items():
                if key not in out:
                    out[key] = value
                elif isinstance(value, (int, float)) and isinstance(out[key], (int, float)):
                    out[key] = max(out[key], value)
        return out

    def rule(self, kind: str, models: list[str] | None = None) -> ModelRule:
        """The repeated sections of a rule of ``kind``: "judge", the run's judge model; any other
        kind ("backbone"; the jury's "juror"), the model the job's wildcard of that name names, one
        of ``models`` (default: the backbones)."""
        cache_dir = self.plan.config["cache_dir"]
        if kind == "judge":
            return ModelRule(input={"weights": self.files(self.plan.judge)},
                             params={"model": self.spec(self.plan.judge), "cache_dir": cache_dir},
                             threads=self.threads(self.plan.judge), resources=self.resources(self.plan.judge))
        models = self.plan.config["backbones"] if models is None else models

        def named(w):
            return getattr(w, kind)

        return ModelRule(input={"weights": lambda w: self.files(named(w))},
                         params={"model": lambda w: self.spec(named(w)), "cache_dir": cache_dir},
                         threads=lambda w: self.threads(named(w)),
                         resources=self.resources(wildcard=kind, models=models))

    def resources(self, name=None, wildcard: str = "backbone", models=None) -> dict:
        """A model rule's resources (lmad.job_resources): the sizing of a fixed model; for a rule
        whose ``wildcard`` names the model (default {backbone}, over the backbones; rule jury:
        {juror}, over the jurors), one function per resource any of ``models`` sets (a model that
        does not set it gets None, i.e. the resource is left unset)."""
        if name is not None:
            return self.sizing(name)
        models = self.plan.config["backbones"] if models is None else models
        keys = sorted(set().union(*(self.sizing(m) for m in models)))
        return {key: self._wildcard_resource(key, wildcard) for key in keys}

    def _wildcard_resource(self, key: str, wildcard: str):
        def resource(wildcards, input):
            value = self.sizing(getattr(wildcards, wildcard)).get(key)
            return unset_mem_mb(self.plan.default_resources, input) if value is None and key == "mem_mb" else value
        return resource

    def served_client_rules(self, defined: set[str]) -> list[str]:
        """Model rules every model of which is served: their jobs only talk to the model's server,
        so on SLURM they run on the submit host and hold no allocation while they wait; the
        server is the model's one SLURM job (lmad.backends.serve). ``defined``: the workflow's rule names."""
        kinds = {"backbone": self.plan.config["backbones"], "judge": [self.plan.judge]}
        calls = {rule: kinds[kind] for kind, rules in MODEL_RULES.items() for rule in rules}
        for planner in self.plan.studies.values():
            calls |= planner.model_rules()
        return [rule for rule, names in calls.items() if rule in defined
                and all(self.plan.config["models"][m].get("serve") for name in names for m in self.of(name))]

    def any_served(self) -> bool:
        return any(m.get("serve") for m in self.plan.config["models"].values())
