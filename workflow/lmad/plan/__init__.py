"""Which tables each job of a run reads and writes: the input functions of the rules.

The rules (rules/*.smk) only wire: their ``input:``, ``output:`` and ``params:`` call a
:class:`Plan` built once from the validated config (rules/common.smk). The plan holds the run's
scope; each axis' tables are a component of it, one module each (``plan.models``,
``plan.questions``, ``plan.analysis``, ``plan.debate``, ``plan.lmad``, ``plan.paper``,
``plan.rounds``, ``plan.societies``), each study's its planner (``plan.study(name)``). Where a table lives
is :mod:`lmad.layout`'s; what a method is, :mod:`lmad.registry`'s; a plan only picks the
tables of a job, so it can be tested without Snakemake: a wildcards argument is anything
with the wildcard names as attributes (``keys()`` where a rule may lack one).

Path lists keep one order per kind (the stage functions read them by position or parse
them with ``layout.parse``): datasets in config order, methods in config order, rounds and
iterations ascending. Patterns (a rule's ``output:``) keep the ``{backbone}``, ``{shard}``
… wildcards; input functions fill them from a job's wildcards.
"""
from __future__ import annotations

import re
from typing import Any

from .. import layout, studies
from ..layout import shard_name, shard_names
from ..registry import METHODS, names
from .analysis import AnalysisPlan
from .debate_rounds import DebatePlan
from .lmad_stages import LmadPlan
from .models import MODEL_RULES, ModelPlan, ModelRule  # noqa: F401 (rules/common.smk names lmad.plan.ModelRule)
from .paper import PaperPlan
from .questions import QuestionPlan
from .rounds import RoundPlan
from .societies import SocietyPlan

# The LMAD chain (the proposals, then five stage jobs per iteration, each waiting for the last)
# is a run's longest path: its jobs start first whenever a core frees, and the independent
# debate rounds fill the others. Without it Snakemake ran the debate rounds first and the chain
# alone at the end (4 x 500, L = 10: 80 of 172 s with one job running); without it on
# `generate` the proposals waited for other jobs (2.5 s later on the same benchmark).
LMAD_CHAIN_PRIORITY = 10


class Plan:
    """The jobs' tables of one run (``config``: validated, with the schema's defaults): the run's scope
    here, each axis' tables in its component, each study's in its planner."""

    def __init__(self, config: dict[str, Any]):
        self.config = config
        # the profile's default resources (lmad.job_resources.profile_defaults), set by the Snakefile
        self.default_resources: dict = {}
        self.datasets = list(config["datasets"])
        # a backbone wildcard names a run (lmad.layout.runs): the backbone, or one replicate
        # {backbone}/seed{s} when the config lists `seeds`; models via layout.model_of
        self.seeds = config.get("seeds") or []
        self.backbones = layout.runs(config["backbones"], self.seeds)
        self.judge = config["judge"]["model"]
        self.methods = list(config["methods"])
        self.lmad_methods = names("lmad", self.methods)
        self.debate_methods = [m for m in self.methods if METHODS[m].family == "debate"]  # config order
        # sharding (rules/shards.smk): with `shards: N` > 1 every question-level rule runs on the
        # shards {dataset}.shard{s}; prepare_data, shard_data and merge_shards see the datasets
        self.shards = config["shards"]
        self.work_datasets = [w for d in self.datasets for w in shard_names(d, self.shards)]
        # per-backbone question counts (config backbone_n): such a backbone reads its own subset
        self.backbone_n = config.get("backbone_n") or {}
        self.societies_config = config["societies"]  # config `societies` (plan.societies: their tables)
        # read by the core's own jobs too: layer A is asked inside rule debate_round
        self.disagreement = config["disagreement"]
        # the axes' tables, each reading the run's scope, the studies and the other axes through this plan
        self.models = ModelPlan(self)
        self.questions = QuestionPlan(self)
        self.analysis = AnalysisPlan(self)
        self.debate = DebatePlan(self)
        self.lmad = LmadPlan(self)
        self.paper = PaperPlan(self)
        self.rounds = RoundPlan(self)
        self.societies = SocietyPlan(self)
        # every registered study's planner (lmad.studies), enabled or not: its rules are always
        # defined, and only an enabled study adds its outputs to `rule all`
        self.studies = {name: studies.planning(name).Planner(self) for name in studies.STUDIES}
        self.enabled_studies = [name for name in studies.STUDIES if studies.planning(name).enabled(config)]

    def study(self, name: str):
        """A study's planner (lmad.studies.<name>.plan.Planner): its rules' input functions."""
        return self.studies[name]

    @staticmethod
    def study_rules() -> list[str]:
        """Every study's rules file, in the order the Snakefile includes them."""
        return [studies.rules_file(name) for name in studies.STUDIES]

    def wildcard_constraints(self) -> dict[str, str]:
        return {
            "dataset": "|".join(re.escape(w) for w in self.work_datasets),
            "shard": r"\d+",
            "backbone": "|".join(map(re.escape, self.backbones)),
            "stage": "cot|proposals",
            # rule predict's methods (single-round) and debate_round's; lmad_predict and debate_predict
            # serve every method of their family in one job, with no method wildcard
            "method": "|".join(map(re.escape, names("single"))),
            "debate_method": "|".join(map(re.escape, names("debate"))),  # "+" of a society (lmad.societies)
            "iteration": r"\d+",
            "debate_round": r"\d+",
        }

    def job_datasets(self, wildcards=None) -> list[str]:
        """The work datasets of one stage job, in config order: patterns with a {shard} wildcard
        (rule outputs), or concrete for a job's wildcards (input functions)."""
        shard = "{shard}" if wildcards is None else getattr(wildcards, "shard", None)
        return [d if self.shards == 1 else shard_name(d, shard) for d in self.datasets]

    def job_log(self, family: str, name: str, folder: str = "logs", ext: str = "log") -> str:
        """Log (or benchmark) path of a per-backbone stage job."""
        shard = "shard{shard}/" if self.shards > 1 else ""
        return f"{folder}/{{backbone}}/{family}/{shard}{name}.{ext}"

    def call_seed(self, wildcards) -> int:
        """The seed a job's model calls derive from: its replicate's, else the config's. Question
        sampling, option permutations, batteries and the bootstrap always use config `seed`."""
        replicate = layout.replicate_of(wildcards.backbone)
        return self.config["seed"] if replicate is None else replicate

    def dataset_names(self) -> str:
        """The constraint of the rules that see configured datasets only."""
        return "|".join(re.escape(d) for d in self.datasets)

    def all_outputs(self) -> list[str]:
        """Every target of `rule all`."""
        replicates = [layout.analysis(b, "replicates.md") for b in self.config["backbones"]] if self.seeds else []
        return ([layout.analysis(b, name) for b in self.backbones
                 for name in ("table.md", "accuracy.png", "costs_by_model.md")]
                + replicates + [layout.MANIFEST, self.analysis.judge_validation_file("validation.md"), *self.paper.outputs(),
                                *self.societies.outputs()]
                + [out for name in self.enabled_studies for out in self.study(name).outputs()])

    def disagreement_on(self) -> bool:
        """Whether the run builds the disagreement table (lmad.forecast counts its jobs)."""
        return "disagreement" in self.enabled_studies and self.study("disagreement").on()
