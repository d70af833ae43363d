"""LMAD's stage jobs (rules/lmad.smk): one job per (backbone, iteration) serves every (dataset, LMAD
method) unit; the generations' path lists follow LmadPlan.units() order, every other stage table
is one file of all units (lmad.layout.lmad_iteration)."""
from __future__ import annotations

from .. import layout
from ..registry import METHODS
from ..tones import tone_role


class LmadPlan:
    """LMAD tables of a run's plan (``plan.lmad``): the run's scope, and any other
    axis' tables, come from ``plan`` (lmad.plan.Plan)."""

    def __init__(self, plan):
        self.plan = plan

    def units(self) -> list[list[str]]:
        """The (dataset, method) pairs of an LMAD stage job, in the order of its path lists."""
        return [[d, m] for d in self.plan.datasets for m in self.plan.lmad_methods]

    def unit_questions(self, wildcards) -> list[str]:
        return [q for q in self.plan.questions.tables(wildcards) for _ in self.plan.lmad_methods]

    def unit_tables(self, stage: str, backbone="{backbone}", iteration="{iteration}", wildcards=None) -> list[str] | str:
        """One stage's table of every unit in one iteration (wildcards kept unless given): the
        generations one file per unit, in units() order; any other stage one file for them all
        (lmad.layout.lmad_iteration)."""
        if stage in layout.LMAD_ITERATION_STAGES:
            return layout.lmad_iteration(backbone, iteration, stage, self.shard(wildcards))
        return [layout.lmad_table(backbone, w, m, iteration, stage) for w in self.plan.job_datasets(wildcards)
                for m in self.plan.lmad_methods]

    def shard(self, wildcards=None):
        """The shard of a stage job of a sharded run ("{shard}" in a rule pattern); None unsharded."""
        if self.plan.shards == 1:
            return None
        return "{shard}" if wildcards is None else getattr(wildcards, "shard", None)  # as plan.job_datasets

    def log(self, stage: str, folder: str = "logs", ext: str = "log") -> str:
        return self.plan.job_log("lmad", f"iter{{iteration}}/{stage}", folder, ext)

    def params(self) -> dict:
        """The params every LMAD model stage passes its stage function (beside its model's, plan.models.rule)."""
        return {"units": self.units(), "iteration": lambda w: int(w.iteration)}

    def state(self, wildcards) -> dict:
        """The states entering iteration k: the previous commit's; none at k = 0 (all active, P empty)."""
        k = int(wildcards.iteration)
        return {"state": self.unit_tables("state", wildcards.backbone, k - 1, wildcards)} if k > 0 else {}

    def generate_inputs(self, wildcards) -> dict:
        """Iteration 0 reuses the shared self-consistency proposals: zero calls. They are listed for
        the units without a society only (in unit order): a society method's iteration 0 is its
        members' pool calls, so a run of society methods alone never computes the proposals."""
        if int(wildcards.iteration) == 0:
            plain = [m for m in self.plan.lmad_methods if not METHODS[m].society]
            tables = [layout.samples(wildcards.backbone, w, "proposals") for w in self.plan.job_datasets(wildcards)
                      for _ in plain]
            return ({"proposals": tables} if tables else {}) | self.society(wildcards)
        return self.state(wildcards) | self.society(wildcards)

    def society(self, wildcards) -> dict:
        """The society file, an input of the stages whose agents speak (generate, debate) when the run
        has an LMAD method with a society (lmad+ac-greedy); none otherwise."""
        if not any(METHODS[m].society for m in self.plan.lmad_methods):
            return {}
        return {"members": layout.society(wildcards.backbone, "members")}

    def every_iteration(self, backbone: str, datasets, stage: str, last: int = 0, method_first: bool = True,
                        shard=None) -> list[str]:
        """One LMAD stage's table of every LMAD method, dataset and iteration 0 .. L - 1 - ``last``:
        method after method (``method_first``) or dataset after dataset, iterations in order; a
        stage whose iteration is one file (lmad.layout.lmad_iteration), that file per iteration."""
        iterations = range(self.plan.config["lmad"]["iterations"] - last)
        if stage in layout.LMAD_ITERATION_STAGES:
            return [layout.lmad_iteration(backbone, k, stage, shard) for k in iterations]
        if method_first:
            return [layout.lmad_table(backbone, w, m, k, stage) for m in self.plan.lmad_methods for w in datasets
                    for k in iterations]
        return [layout.lmad_table(backbone, w, m, k, stage) for w in datasets for m in self.plan.lmad_methods
                for k in iterations]

    def every_iteration_by_method(self, stage: str):
        """Input function: every LMAD method's ``stage`` table of every iteration."""
        return lambda w: self.every_iteration(w.backbone, self.plan.job_datasets(w), stage, shard=self.shard(w))

    def final_state(self, wildcards) -> str:
        return self.unit_tables("state", wildcards.backbone, self.plan.config["lmad"]["iterations"] - 1, wildcards)

    def every_iteration_by_dataset(self, stage: str, last: int = 0):
        """Input function: one LMAD stage's table of every dataset, LMAD method and iteration of a
        backbone (iterations 0 .. L - 1 - ``last``)."""
        return lambda w: self.every_iteration(w.backbone, self.plan.job_datasets(w), stage, last, method_first=False,
                                              shard=self.shard(w))

    def local_debate_inputs(self, wildcards) -> dict:
        """Every iteration's localization and positions of LMAD's local debates (what a study that
        reads every debate reply reads besides the debate rounds: layer B, the process rubric)."""
        if not self.plan.lmad_methods:
            return {}
        return {"lmad_localizations": self.every_iteration_by_dataset("localize")(wildcards),
                "lmad_positions": self.every_iteration_by_dataset("debate")(wildcards)}

    def tone_prompts(self) -> dict:
        """The tone instructions (lmad.tones) of the run's toned LMAD methods: inputs of the local
        debate only (none in a run without one, so its jobs are unchanged)."""
        roles = sorted({tone_role(METHODS[m].tone) for m in self.plan.lmad_methods} - {None})
        return {f"prompt_{role}": self.plan.config["prompts"][role] for role in roles}

    def dag(self) -> bool:
        """Whether the run has a graph LMAD method (lmad-dag, …; registry ``structure``)."""
        return any(METHODS[m].structure == "dag" for m in self.plan.lmad_methods)

    def premise_prompt(self) -> dict:
        """The premise extractor's prompt: an input of lmad_extract only in a run with a graph LMAD
        method, so editing it never reruns a chain-only run's extraction."""
        return {"premise_prompt": self.plan.config["prompts"]["extractor_premises"]} if self.dag() else {}

    def graph_params(self) -> dict:
        """lmad_localize's graph settings (config ``lmad.graph``), only in a run with a graph LMAD method."""
        graph = self.plan.config["lmad"]["graph"]
        return {"max_conflicts": graph["max_conflicts"], "align_jaccard": graph["align_jaccard"]} if self.dag() else {}
