"""Which tables each job of a run reads and writes: the input functions of the rules.

The rules (rules/*.smk) only wire: their ``input:``, ``output:`` and ``params:`` call a
:class:`Plan` built once from the validated config (rules/common.smk). Where a table lives
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
from dataclasses import dataclass
from typing import Any, Callable

from . import committees, layout
from .data import ANSWER_TYPE
from .data.loaders import dataset_type
from .job_resources import model_sizing, unset_mem_mb
from .layout import shard_name, shard_names
from .protocols.debate import setting_of
from .registry import METHODS, TABLE2_METHODS, TRACE_FIGURE_METHODS, names
from .societies import split_society, sweep_sizes
from .tones import tone_role

# The LMAD chain (the proposals, then five stage jobs per iteration, each waiting for the last)
# is a run's longest path: its jobs start first whenever a core frees, and the independent
# debate rounds fill the others. Without it Snakemake ran the debate rounds first and the chain
# alone at the end (4 x 500, L = 10: 80 of 172 s with one job running); without it on
# `generate` the proposals waited for other jobs (2.5 s later on the same benchmark).
LMAD_CHAIN_PRIORITY = 10

# The rules whose jobs call a model, by whose model: the backbone of the job, the judge, a juror.
MODEL_RULES = {
    "backbone": ["generate", "debate_round", "lmad_generate", "lmad_extract", "lmad_localize", "lmad_debate",
                 "lmad_resolve", "sc_matched", "society_pool", "finalizers", "lmad_self_report", "probe"],
    "judge": ["judge", "judge_validation", "pushback_validation", "pushback", "process_scores", "rubric_validation"],
    "juror": ["jury"],
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


class Plan:
    """The jobs' tables of one run (``config``: validated, with the schema's defaults)."""

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
        self.finalize = config["finalizers"]
        self.societies = config["societies"]
        self.disagreement = config["disagreement"]
        self.jury = config["jury"]
        self.jurors = self.jury["judges"] or [self.judge]
        self.opinion_datasets = [d for d in self.datasets
                                 if ANSWER_TYPE[dataset_type(d, config["datasets"][d])] == "opinion"]

    # ---- wildcard constraints

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

    def dataset_names(self) -> str:
        """The constraint of the rules that see configured datasets only."""
        return "|".join(re.escape(d) for d in self.datasets)

    # ---- question-level stage jobs: one per backbone (and shard), every dataset in one batch

    def job_datasets(self, wildcards=None) -> list[str]:
        """The work datasets of one stage job, in config order: patterns with a {shard} wildcard
        (rule outputs), or concrete for a job's wildcards (input functions)."""
        shard = "{shard}" if wildcards is None else getattr(wildcards, "shard", None)
        return [d if self.shards == 1 else shard_name(d, shard) for d in self.datasets]

    def questions_path(self, backbone: str, work_dataset: str) -> str:
        return layout.questions(work_dataset, backbone if layout.model_of(backbone) in self.backbone_n else None)

    def call_seed(self, wildcards) -> int:
        """The seed a job's model calls derive from: its replicate's, else the config's. Question
        sampling, option permutations, batteries and the bootstrap always use config `seed`."""
        replicate = layout.replicate_of(wildcards.backbone)
        return self.config["seed"] if replicate is None else replicate

    def question_tables(self, wildcards) -> list[str]:
        return [self.questions_path(wildcards.backbone, w) for w in self.job_datasets(wildcards)]

    def backbone_subset_inputs(self, wildcards) -> dict[str, str]:
        """The full dataset (its seeded ranking decides the subset) and the work dataset (a shard) to filter."""
        base = next(d for d in self.datasets if wildcards.dataset in shard_names(d, self.shards))
        return {"full": layout.questions(base), "part": layout.questions(wildcards.dataset)}

    def backbone_n_of(self, wildcards) -> int:
        return self.backbone_n[layout.model_of(wildcards.backbone)]

    def sample_tables(self) -> list[str]:
        return [layout.samples("{backbone}", w, "{stage}") for w in self.job_datasets()]

    def proposal_tables(self, wildcards) -> list[str]:
        return [layout.samples(wildcards.backbone, w, "proposals") for w in self.job_datasets(wildcards)]

    @staticmethod
    def stage_temperatures(stage: str, temperatures: list[float]) -> list[float]:
        return [0.0] if stage == "cot" else temperatures

    def job_log(self, family: str, name: str, folder: str = "logs", ext: str = "log") -> str:
        """Log (or benchmark) path of a per-backbone stage job."""
        shard = "shard{shard}/" if self.shards > 1 else ""
        return f"{folder}/{{backbone}}/{family}/{shard}{name}.{ext}"

    def shard_parts(self, wildcards) -> list[str]:
        """A per-question table of a dataset, from each of its shards (rule merge_shards)."""
        return [layout.per_question(wildcards.backbone, w, wildcards.table)
                for w in shard_names(wildcards.dataset, self.shards)]

    # ---- predictions: one job per backbone (and shard) writes every dataset's table

    def prediction_outputs(self, methods=("{method}",)) -> list[str]:
        """Every dataset's predictions of each method, method after method (job_datasets order)."""
        return [layout.predictions("{backbone}", w, m) for m in methods for w in self.job_datasets()]

    def prediction_log(self, name: str = "{method}") -> str:
        return self.job_log("predict", name)

    def prediction_units(self, methods=None):
        """Params: the (dataset, method) units of a predictions job: ``methods`` in order, each over
        the datasets (the job's ``{method}`` wildcard when None)."""
        return lambda w: [[d, m] for m in (methods or [w.method]) for d in self.datasets]

    def vote_samples(self, wildcards) -> list[str]:
        """The samples table a single-round method votes over, of every dataset of the job."""
        return [layout.samples(wildcards.backbone, w, METHODS[wildcards.method].samples)
                for w in self.job_datasets(wildcards)]

    # ---- models: what a stage's backend gets, and what its job asks the scheduler for

    def model_spec(self, name: str) -> dict:
        """A model's config entry (``name``: the model, or a run of it), with the converted-weights
        folder for GGUF sources; a committee's: its first member's, with the committee
        (lmad.committees.committee_param)."""
        name = layout.model_of(name)
        if committees.is_committee(self.config, name):
            return committees.committee_param(self.config, name, self.model_spec)
        models = self.config["models"]
        spec = {"name": name, **models[name]}
        if "gguf" in spec:
            spec["model"] = self._converted(name)
        if spec.get("serve"):  # the server's own SLURM job is sized like an offline stage job
            spec["server_resources"] = model_sizing(models, name, served_as_client=False)
        # job sizing (resources:) is scheduling only: it never reaches the backend or params
        return {k: v for k, v in spec.items() if k not in ("gguf", "resources")}

    def models_of(self, name: str) -> list[str]:
        """The models a backbone's (or a run's) jobs call: a committee's every member and role model."""
        return committees.models_of(self.config, layout.model_of(name))

    def agent_temperatures(self, backbone: str) -> list[float]:
        """The temperatures of a backbone's agents (the proposals, LMAD): a committee's members'."""
        return committees.agent_temperatures(self.config, layout.model_of(backbone))

    def _converted(self, name: str) -> str:
        """The converted-weights folder of a GGUF model: the first model's (config order) with the same
        GGUF, so a perturbed copy of a model (``perturb:``) converts nothing twice."""
        gguf = self.config["models"][name]["gguf"]
        first = next(m for m, spec in self.config["models"].items() if spec.get("gguf") == gguf)
        return f"resources/models/{first}"

    def model_files(self, name: str) -> list[str]:
        return list(dict.fromkeys(self._converted(m) for m in self.models_of(name) if "gguf" in self.config["models"][m]))

    def model_threads(self, name: str) -> int:
        def threads(spec: dict) -> int:
            return 1 if spec.get("serve") else spec.get("threads", 1)  # a served model's jobs are HTTP clients

        # a committee job runs its members' batches one after the other: the most any of them uses
        return max(threads(self.config["models"][m]) for m in self.models_of(name))

    def sizing(self, name: str) -> dict:
        """A backbone's job resources: a committee job holds every member model, so each resource is
        the largest any member asks for (placement strings: the first member's that sets one)."""
        out: dict = {}
        for m in self.models_of(name):
            for key, value in model_sizing(self.config["models"], m).items():
                if key not in out:
                    out[key] = value
                elif isinstance(value, (int, float)) and isinstance(out[key], (int, float)):
                    out[key] = max(out[key], value)
        return out

    def model_rule(self, kind: str) -> ModelRule:
        """The repeated sections of a rule of ``kind`` (MODEL_RULES): "judge", the run's judge model;
        "backbone" and "juror", the model the job's wildcard of that name names."""
        cache_dir = self.config["cache_dir"]
        if kind == "judge":
            return ModelRule(input={"weights": self.model_files(self.judge)},
                             params={"model": self.model_spec(self.judge), "cache_dir": cache_dir},
                             threads=self.model_threads(self.judge), resources=self.model_resources(self.judge))
        models = {"backbone": self.config["backbones"], "juror": self.jurors}[kind]

        def named(w):
            return getattr(w, kind)

        return ModelRule(input={"weights": lambda w: self.model_files(named(w))},
                         params={"model": lambda w: self.model_spec(named(w)), "cache_dir": cache_dir},
                         threads=lambda w: self.model_threads(named(w)),
                         resources=self.model_resources(wildcard=kind, models=models))

    def model_resources(self, name=None, wildcard: str = "backbone", models=None) -> dict:
        """A model rule's resources (lmad.job_resources): the sizing of a fixed model; for a rule
        whose ``wildcard`` names the model (default {backbone}, over the backbones; rule jury:
        {juror}, over the jurors), one function per resource any of ``models`` sets (a model that
        does not set it gets None, i.e. the resource is left unset)."""
        if name is not None:
            return self.sizing(name)
        models = self.config["backbones"] if models is None else models
        keys = sorted(set().union(*(self.sizing(m) for m in models)))
        return {key: self._wildcard_resource(key, wildcard) for key in keys}

    def _wildcard_resource(self, key: str, wildcard: str):
        def resource(wildcards, input):
            value = self.sizing(getattr(wildcards, wildcard)).get(key)
            return unset_mem_mb(self.default_resources, input) if value is None and key == "mem_mb" else value
        return resource

    def served_client_rules(self, defined: set[str]) -> list[str]:
        """Model rules every model of which is served: their jobs only talk to the model's server,
        so on SLURM they run on the submit host and hold no allocation while they wait; the
        server is the model's one SLURM job (lmad.backends.serve). ``defined``: the workflow's rule names."""
        models = {"backbone": [m for b in self.config["backbones"] for m in self.models_of(b)], "judge": [self.judge],
                  "juror": self.jurors}
        served = {kind: all(self.config["models"][m].get("serve") for m in ms) for kind, ms in models.items()}
        return [rule for kind, rules in MODEL_RULES.items() if served[kind] for rule in rules if rule in defined]

    def any_served(self) -> bool:
        return any(m.get("serve") for m in self.config["models"].values())

    def dataset_spec(self, name: str) -> dict:
        # the resolved type is always a parameter: a table written before the benchmark column
        # existed is rebuilt rather than read against the new schema
        spec = self.config["datasets"][name]
        return {"name": name, "seed": self.config["seed"], **spec, "type": dataset_type(name, spec)}

    def dataset_files(self, name: str) -> list[str]:
        """The dataset's local files, as configured (the rule resolves them against the checkout)."""
        spec = self.config["datasets"][name]
        files = [spec["path"]] if spec.get("source", "jsonl") in ("jsonl", "local") else []
        return files + ([spec["aliases_path"]] if spec.get("aliases_path") else [])

    # ---- judge and analysis: every method's predictions, dataset after dataset

    def predictions_of(self, backbone: str, dataset: str) -> list[str]:
        return [layout.predictions(backbone, dataset, m) for m in self.methods]

    def backbone_predictions(self, wildcards) -> list[str]:
        return [p for d in self.datasets for p in self.predictions_of(wildcards.backbone, d)]

    def configured_questions(self, wildcards=None) -> list[str]:
        """The questions of every configured dataset (merged, whatever the shards)."""
        return [layout.questions(d) for d in self.datasets]

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

    # ---- costs by model (rules/analysis.smk: costs_by_model)

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

    # ---- what `rule all` builds

    def all_outputs(self) -> list[str]:
        """Every target of `rule all`."""
        replicates = [layout.analysis(b, "replicates.md") for b in self.config["backbones"]] if self.seeds else []
        return ([layout.analysis(b, name) for b in self.backbones
                 for name in ("table.md", "accuracy.png", "costs_by_model.md")]
                + replicates + [layout.MANIFEST, self.judge_validation_file("validation.md"), *self.paper_outputs(),
                                *self.opinion_outputs(), *self.readout_outputs(), *self.society_outputs()])

    # ---- LMAD (rules/lmad.smk): one stage job per (backbone, iteration) serves every
    # (dataset, LMAD method) unit; path lists follow lmad_units() order

    def lmad_units(self) -> list[list[str]]:
        """The (dataset, method) pairs of an LMAD stage job, in the order of its path lists."""
        return [[d, m] for d in self.datasets for m in self.lmad_methods]

    def lmad_unit_questions(self, wildcards) -> list[str]:
        return [q for q in self.question_tables(wildcards) for _ in self.lmad_methods]

    def lmad_paths(self, stage: str, backbone="{backbone}", iteration="{iteration}", wildcards=None) -> list[str]:
        """One stage's table of every unit, in lmad_units() order (wildcards kept unless given)."""
        return [layout.lmad_table(backbone, w, m, iteration, stage) for w in self.job_datasets(wildcards)
                for m in self.lmad_methods]

    def lmad_log(self, stage: str, folder: str = "logs", ext: str = "log") -> str:
        return self.job_log("lmad", f"iter{{iteration}}/{stage}", folder, ext)

    def lmad_params(self) -> dict:
        """The params every LMAD model stage passes its stage function (beside its model's, model_rule)."""
        return {"units": self.lmad_units(), "iteration": lambda w: int(w.iteration)}

    def lmad_state(self, wildcards) -> dict:
        """The states entering iteration k: the previous commit's; none at k = 0 (all active, P empty)."""
        k = int(wildcards.iteration)
        return {"state": self.lmad_paths("state", wildcards.backbone, k - 1, wildcards)} if k > 0 else {}

    def lmad_generate_inputs(self, wildcards) -> dict:
        """Iteration 0 reuses the shared self-consistency proposals: zero calls. They are listed for
        the units without a society only (in unit order): a society method's iteration 0 is its
        members' pool calls, so a run of society methods alone never computes the proposals."""
        if int(wildcards.iteration) == 0:
            plain = [m for m in self.lmad_methods if not METHODS[m].society]
            tables = [layout.samples(wildcards.backbone, w, "proposals") for w in self.job_datasets(wildcards)
                      for _ in plain]
            return ({"proposals": tables} if tables else {}) | self.lmad_society(wildcards)
        return self.lmad_state(wildcards) | self.lmad_society(wildcards)

    def lmad_society(self, wildcards) -> dict:
        """The society file, an input of the stages whose agents speak (generate, debate) when the run
        has an LMAD method with a society (lmad+ac-greedy); none otherwise."""
        if not any(METHODS[m].society for m in self.lmad_methods):
            return {}
        return {"members": layout.society(wildcards.backbone, "members")}

    def lmad_tables(self, backbone: str, datasets, stage: str, last: int = 0, method_first: bool = True) -> list[str]:
        """One LMAD stage's table of every LMAD method, dataset and iteration 0 .. L - 1 - ``last``:
        method after method (``method_first``) or dataset after dataset, iterations in order."""
        iterations = range(self.config["lmad"]["iterations"] - last)
        if method_first:
            return [layout.lmad_table(backbone, w, m, k, stage) for m in self.lmad_methods for w in datasets
                    for k in iterations]
        return [layout.lmad_table(backbone, w, m, k, stage) for w in datasets for m in self.lmad_methods
                for k in iterations]

    def lmad_iteration_tables(self, stage: str):
        """Input function: every LMAD method's ``stage`` table of every iteration."""
        return lambda w: self.lmad_tables(w.backbone, self.job_datasets(w), stage)

    def lmad_final_state(self, wildcards) -> list[str]:
        last = self.config["lmad"]["iterations"] - 1
        return [layout.lmad_table(wildcards.backbone, w, m, last, "state")
                for m in self.lmad_methods for w in self.job_datasets(wildcards)]

    def lmad_debate_tables(self, stage: str, last: int = 0):
        """Input function: one LMAD stage's table of every dataset, LMAD method and iteration of a
        backbone (iterations 0 .. L - 1 - ``last``)."""
        return lambda w: self.lmad_tables(w.backbone, self.job_datasets(w), stage, last, method_first=False)

    def lmad_tone_prompts(self) -> dict:
        """The tone instructions (lmad.tones) of the run's toned LMAD methods: inputs of the local
        debate only (none in a run without one, so its jobs are unchanged)."""
        roles = sorted({tone_role(METHODS[m].tone) for m in self.lmad_methods} - {None})
        return {f"prompt_{role}": self.config["prompts"][role] for role in roles}

    def lmad_dag(self) -> bool:
        """Whether the run has a graph LMAD method (lmad-dag, …; registry ``structure``)."""
        return any(METHODS[m].structure == "dag" for m in self.lmad_methods)

    def lmad_premise_prompt(self) -> dict:
        """The premise extractor's prompt: an input of lmad_extract only in a run with a graph LMAD
        method, so editing it never reruns a chain-only run's extraction."""
        return {"premise_prompt": self.config["prompts"]["extractor_premises"]} if self.lmad_dag() else {}

    def lmad_graph_params(self) -> dict:
        """lmad_localize's graph settings (config ``lmad.graph``), only in a run with a graph LMAD method."""
        graph = self.config["lmad"]["graph"]
        return {"max_conflicts": graph["max_conflicts"], "align_jaccard": graph["align_jaccard"]} if self.lmad_dag() else {}

    # ---- debate baselines (rules/debate.smk): one job per (backbone, method, round)

    def debate_setting(self, method: str, backbone: str | None = None):
        """Agents, temperatures, rounds and manners of a debate method (config ``debate``); on a
        committee backbone (or a run of one) its members are the agents. Rounds never depend on it."""
        return setting_of(method, self.config, None if backbone is None else layout.model_of(backbone))

    def aux_max_tokens(self, method: str) -> dict:
        """Budgets of a debate round's calls of no agent: config ``debate.max_tokens``, plus the
        chair's (config ``chair.max_tokens``) for the chair's methods only, so no other job's params change."""
        budgets = dict(self.config["debate"]["max_tokens"])
        if METHODS[method].protocol.final == "chair":
            budgets["chair"] = self.config["chair"]["max_tokens"]
        return budgets

    def rounds_of(self, method: str, first: int = 0) -> range:
        """A debate method's saved rounds, ``first`` .. R."""
        return range(first, self.debate_setting(method).rounds + 1)

    def debate_tables(self, backbones, datasets, part: str = "", first: int = 0) -> list[str]:
        """Every debate method's round tables (``part``), backbone, dataset, method, then round."""
        return [layout.debate_round(b, d, m, t, part) for b in backbones for d in datasets
                for m in self.debate_methods for t in self.rounds_of(m, first)]

    def debate_round_outputs(self, part: str) -> list[str]:
        return [layout.debate_round("{backbone}", w, "{debate_method}", "{debate_round}", part)
                for w in self.job_datasets()]

    def debate_round_inputs(self, wildcards) -> dict:
        """Round 0 of a protocol that opens like self-consistency, at the persona temperatures, is the
        shared proposals table (zero calls); round t >= 1 reads round t - 1. Plus the prompt
        templates this round uses, so editing one reruns only its rounds. A method with a society
        reads the society file in every round, so a re-selection reruns all of them."""
        t, method = int(wildcards.debate_round), wildcards.debate_method
        setting = self.debate_setting(method, wildcards.backbone)
        inputs = {"members": layout.society(wildcards.backbone, "members")} if setting.society else {}
        if t == 0 and setting.shares_proposals:
            inputs["proposals"] = self.proposal_tables(wildcards)
        elif t > 0:
            for name, part in (("previous", ""), ("previous_state", "_state")):
                inputs[name] = [layout.debate_round(wildcards.backbone, w, method, t - 1, part)
                                for w in self.job_datasets(wildcards)]
        roles = METHODS[method].protocol.prompt_roles(t, t == setting.rounds, setting.manners,
                                                       setting.shares_proposals)
        prompts = self.config["prompts"]
        return inputs | {f"prompt_{role}": prompts[role] for role in roles + self.disagreement_roles(method, t)}

    def disagreement_roles(self, method: str, t: int) -> list[str]:
        """The prompt roles of a debate round besides its protocol's: the tone instruction of a toned
        method (lmad.tones) and the layer-A self-report (config disagreement.self_report), both in
        rounds t >= 1 only."""
        if t == 0:
            return []
        role = tone_role(METHODS[method].tone)
        return ([role] if role else []) + (["self_report"] if self.disagreement["self_report"] else [])

    def debate_round_tables(self, part: str):
        """Input function: every debate method's round table (``part``) of every round: method after
        method, dataset after dataset (job_datasets order), rounds in order."""
        return lambda w: [layout.debate_round(w.backbone, d, m, t, part) for m in self.debate_methods
                          for d in self.job_datasets(w) for t in self.rounds_of(m)]

    def debate_final_state(self, wildcards) -> list[str]:
        return [layout.debate_round(wildcards.backbone, w, m, self.debate_setting(m).rounds, "_state")
                for m in self.debate_methods for w in self.job_datasets(wildcards)]

    def debate_replies(self, wildcards) -> list[str]:
        """Every round's answers table of every configured debate method of one backbone."""
        return self.debate_tables([wildcards.backbone], self.job_datasets(wildcards))

    # ---- paper tables, figures and trace viewer (rules/paper.smk): every backbone, or the
    # job's one where the rule has that wildcard

    def _backbones(self, wildcards) -> list[str]:
        return [wildcards.backbone] if wildcards is not None and "backbone" in wildcards.keys() else self.backbones

    def paper_columns(self) -> list[str]:
        """Table 1 columns: the configured list, restricted to methods this run has."""
        return [m for m in self.config["paper"]["columns"] if m in self.methods]

    def paper_judgments(self, wildcards=None) -> list[str]:
        return [layout.judgments(b, d) for b in self._backbones(wildcards) for d in self.datasets]

    def paper_predictions(self, wildcards=None) -> list[str]:
        return [p for b in self.backbones for d in self.datasets for p in self.predictions_of(b, d)]

    def paper_proposals(self, wildcards=None) -> list[str]:
        return [layout.samples(b, d, "proposals") for b in self.backbones for d in self.datasets]

    def paper_rounds0(self, wildcards=None) -> list[str]:
        """Round 0 of every configured debate method: headroom measures each against its own opening."""
        return [layout.debate_round(b, d, m, 0) for b in self.backbones for d in self.datasets
                for m in self.debate_methods]

    def paper_traces(self, methods=None):
        """Input function: LMAD trace tables of the given LMAD methods (default: Table 2's, all three)."""
        wanted = [m for m in (methods or TABLE2_METHODS) if m in self.methods]
        return lambda w: [layout.lmad_trace(b, d, m) for b in self._backbones(w) for d in self.datasets for m in wanted]

    def paper_rounds(self, wildcards) -> list[str]:
        """Every round table of every configured debate method (one backbone when the rule has one)."""
        return self.debate_tables(self._backbones(wildcards), self.datasets)

    def paper_outputs(self) -> list[str]:
        """Everything rule paper builds under results/paper/."""
        out = [layout.paper(f"{name}.{ext}") for name in ("table1", "cost", "headroom") for ext in ("csv", "md")]
        out += [layout.paper(n) for n in ("table1.tex", "accuracy.png", "pareto.png")]
        if all(m in self.methods for m in TABLE2_METHODS):
            out += [layout.paper(n) for n in ("table2.csv", "table2.md", "table2.tex", "table2_checks.csv")]
        if self.debate_methods:
            out += [layout.paper(n) for n in ("rounds.png", "dynamics.csv", "dynamics.md")]
        if any(m in self.methods for m in TRACE_FIGURE_METHODS):
            out.append(layout.paper("lmad_trace.png"))
        out += self.disagreement_outputs() + self.process_outputs() + self.jury_outputs() + self.truemad_outputs()
        return out + [layout.paper(f"viewer/{b}.html") for b in self.backbones]

    def truemad_outputs(self) -> list[str]:
        """TrueMAD's Table 1 and Tables 4-6 (rule paper_truemad) where config ``paper.truemad`` asks for
        them and the run has a debate method."""
        if not (self.config["paper"].get("truemad") and self.debate_methods):
            return []
        return [layout.paper(f"truemad/{name}.{ext}") for name in ("table1", "tables4-6", "tables7-9") for ext in ("csv", "md")]

    def benchmarks(self) -> dict[str, str]:
        """{dataset: its benchmark (the dataset's ``type``, else its name)}: datasets of one benchmark
        (AIME's yearly copies) pool into one column of TrueMAD's tables."""
        from .data.loaders import dataset_type
        return {name: dataset_type(name, spec) for name, spec in self.config["datasets"].items()}

    def paper_figures(self) -> list[str]:
        """The figures rule paper_figures draws: rounds needs a debate method, lmad_trace lmad or lmad-dag."""
        return (["accuracy", "pareto"] + ["rounds"] * bool(self.debate_methods)
                + ["lmad_trace"] * any(m in self.methods for m in TRACE_FIGURE_METHODS))

    # ---- When Debate Helps (rules/finalizers.smk, readout.smk, societies.smk)

    def finalizer_methods(self) -> list[str]:
        """Methods whose rounds are finalized, config order: every debate and LMAD method, and every
        voting method (SC: its one round, the shared proposals; sc-matched: its samples)."""
        return [m for m in self.methods
                if METHODS[m].family in ("debate", "lmad") or METHODS[m].samples not in (None, "cot")]

    def method_rounds(self, method: str) -> int:
        """How many answer tables a method saves: R + 1 debate rounds, L LMAD iterations, SC's one."""
        family = METHODS[method].family
        if family == "debate":
            return self.debate_setting(method).rounds + 1
        return self.config["lmad"]["iterations"] if family == "lmad" else 1

    @staticmethod
    def round_answers(backbone: str, dataset: str, method: str, t: int) -> str:
        """The answer table of round t of a method (lmad.layout)."""
        family = METHODS[method].family
        if family == "debate":
            return layout.debate_round(backbone, dataset, method, t)
        if family == "lmad":
            return layout.lmad_table(backbone, dataset, method, t, "generate")
        return layout.samples(backbone, dataset, METHODS[method].samples)

    def round_units(self, datasets, methods) -> list[list]:
        """[dataset, method, round] of every answer table of ``methods`` on ``datasets``, rounds in order."""
        return [[d, m, t] for d in datasets for m in methods for t in range(self.method_rounds(m))]

    def finalizer_round_units(self) -> list[list]:
        """[dataset, method, round] of every answer table a finalizers job reads, in input order."""
        return self.round_units(self.datasets, self.finalizer_methods())

    def finalizer_rounds(self, wildcards) -> list[str]:
        return [self.round_answers(wildcards.backbone, d, m, t) for d, m, t in self.finalizer_round_units()]

    def finalized_tables(self, wildcards=None) -> list[str]:
        return [layout.finalized(b, d) for b in self._backbones(wildcards) for d in self.datasets]

    def readout_outputs(self) -> list[str]:
        """What the finalizers and readout rules add to `rule all` (nothing unless enabled)."""
        if not self.finalize["enabled"]:
            return []
        return [layout.paper(f"{name}.{ext}") for name in ("readout", "headroom_lift") for ext in ("csv", "md", "png")]

    def society_outputs(self) -> list[str]:
        """What the society rules add to `rule all` (nothing unless enabled)."""
        if not self.societies["enabled"]:
            return []
        return ([layout.paper(f"societies.{ext}") for ext in ("csv", "md")] + [layout.paper("society_debates.csv")]
                + [layout.paper(f"societies_sweep.{ext}") for ext in ("csv", "md") if self.society_sizes()])

    def society_sizes(self) -> list[int]:
        """The construction-set sizes of the sweep (config societies.split.sizes; none when off)."""
        return sweep_sizes(self.societies["split"]) if self.societies["enabled"] else []

    def held_out_splits(self, wildcards=None) -> list[str]:
        """Every run's construction / held-out split while societies are on (none otherwise): the
        tables with a society column score every method on its held-out questions only."""
        return [layout.society(b, "split") for b in self.backbones] if self.societies["enabled"] else []

    def held_out_size(self) -> int | None:
        """The construction split's questions per benchmark while societies are on (table captions)."""
        return self.societies["split"]["size"] if self.societies["enabled"] else None

    def society_debate_methods(self) -> list[str]:
        """The run's debating and LMAD methods with a society, each followed by its plain method when
        the run has it."""
        out = []
        for m in self.debate_methods + self.lmad_methods:
            if METHODS[m].society:
                out += [m] + [b for b in [split_society(m)[0]] if b in self.methods and b not in out]
        return list(dict.fromkeys(out))

    def society_debate_inputs(self, wildcards) -> dict:
        """Rule paper_societies: every backbone's pool (its splits), questions and the predictions of
        society_debate_methods()."""
        methods = self.society_debate_methods()
        if not methods:
            return {}
        return {"pools": [layout.society(b, "pool") for b in self.backbones],
                "questions": [self.questions_path(b, d) for b in self.backbones for d in self.datasets],
                "predictions": [layout.predictions(b, d, m) for b in self.backbones for d in self.datasets
                                for m in methods]}

    # ---- opinion questions (rules/opinion.smk): their table instead of accuracy

    def opinion_outputs(self) -> list[str]:
        """What rule opinion_table adds to `rule all` (nothing without an opinion dataset)."""
        if not self.opinion_datasets:
            return []
        return [layout.analysis(b, f"opinion.{ext}") for b in self.backbones for ext in ("parquet", "md")]

    def opinion_round_units(self) -> list[list]:
        """[dataset, method, round] of every answer table rule opinion_table reads: the rounds of the
        methods with several agents or samples (the finalizers' methods), rounds in order."""
        return self.round_units(self.opinion_datasets, self.finalizer_methods())

    def opinion_prediction_units(self) -> list[list[str]]:
        rounds = set(self.finalizer_methods())
        return [[d, m] for d in self.opinion_datasets for m in self.methods if m not in rounds]

    def opinion_inputs(self, wildcards) -> dict:
        return {"questions": [self.questions_path(wildcards.backbone, d) for d in self.opinion_datasets],
                "rounds": [self.round_answers(wildcards.backbone, d, m, t) for d, m, t in self.opinion_round_units()],
                "predictions": [layout.predictions(wildcards.backbone, d, m) for d, m in self.opinion_prediction_units()]}

    # ---- disagreement layers (rules/disagreement.smk): off unless config disagreement.self_report
    # or disagreement.pushback is on, and only with a debating method

    def disagreement_on(self) -> bool:
        debating = bool(self.debate_methods or self.lmad_methods)
        return debating and bool(self.disagreement["self_report"] or self.disagreement["pushback"])

    def persistence_params(self) -> dict:
        """Layer C's share of re-asked turns for rules debate_round and lmad_self_report; nothing when
        off (so the default config's jobs keep their params)."""
        share = self.disagreement["persistence"] if self.disagreement["self_report"] else 0
        return {"persistence": share} if share else {}

    def disagreement_outputs(self) -> list[str]:
        out = [layout.paper(f"disagreement.{ext}") for ext in ("csv", "md")] if self.disagreement_on() else []
        probe = [layout.paper(f"probe.{ext}") for ext in ("csv", "md", "png")] if self.disagreement["probe"] else []
        return out + probe

    def pushback_validation_file(self, name: str) -> str:
        """A file of layer B's validation (the run's judge model; rules/disagreement.smk)."""
        return layout.judge_validation(self.judge, f"pushback_{name}")

    def disagreement_inputs(self, wildcards) -> dict:
        """The disagreement table's inputs: the rounds' steps (layer A) when self-reports are on; the
        pushback labels of every backbone and the judge's validation when layer B is on."""
        inputs = {"steps": [], "labels": [], "validation": []}
        if self.disagreement["self_report"]:
            inputs["steps"] = self.debate_tables(self.backbones, self.datasets, "_steps", first=1)
        if self.disagreement["self_report"] and self.lmad_methods:
            inputs["lmad_reports"] = [layout.disagreement(b, "lmad_self_report.parquet") for b in self.backbones]
        if self.disagreement["pushback"]:
            inputs["labels"] = [layout.disagreement(b, "pushback.parquet") for b in self.backbones]
            inputs["validation"] = [self.pushback_validation_file("validation.parquet")]
        return inputs

    def viewer_label_inputs(self, wildcards) -> dict:
        """The trace viewer's disagreement labels of one backbone: only the layers that are on (none
        by default, so the viewer needs no disagreement job)."""
        inputs = {}
        if self.disagreement["self_report"] and self.debate_methods:
            inputs["steps"] = self.debate_tables([wildcards.backbone], self.datasets, "_steps", first=1)
        if self.disagreement["self_report"] and self.lmad_methods:
            inputs["lmad_reports"] = [layout.disagreement(wildcards.backbone, "lmad_self_report.parquet")]
        if self.disagreement["pushback"] and (self.debate_methods or self.lmad_methods):
            inputs["labels"] = [layout.disagreement(wildcards.backbone, "pushback.parquet")]
            inputs["pushback_validation"] = [self.pushback_validation_file("validation.parquet")]
        return inputs

    def pushback_lmad_inputs(self, wildcards) -> dict:
        """Layer B reads LMAD's local debates too: every iteration's localization and positions."""
        if not self.lmad_methods:
            return {}
        return {"lmad_localizations": self.lmad_debate_tables("localize")(wildcards),
                "lmad_positions": self.lmad_debate_tables("debate")(wildcards)}

    # ---- process metrics (rules/process.smk): off unless config process.rubric

    def process_outputs(self) -> list[str]:
        on = self.config["process"]["rubric"] and (self.debate_methods or self.lmad_methods)
        return [layout.paper(f"process.{ext}") for ext in ("csv", "md")] if on else []

    def process_table_inputs(self, wildcards) -> dict:
        """Every backbone's rubric scores, every debate round's answers and every LMAD generation."""
        inputs = {"scores": [layout.disagreement(b, "process_scores.parquet") for b in self.backbones],
                  "rounds": self.debate_tables(self.backbones, self.datasets)}
        if self.lmad_methods:
            inputs["lmad_generate"] = [t for b in self.backbones
                                       for t in self.lmad_tables(b, self.datasets, "generate", method_first=False)]
        if self.config["process"]["battery_questions"]:
            inputs["rubric_validation"] = [self.rubric_validation_file("validation.parquet")]
        return inputs

    def rubric_validation_file(self, name: str) -> str:
        """A file of the rubric judge's validation (the run's judge model; rules/process.smk)."""
        return layout.judge_validation(self.judge, f"rubric_{name}")

    # ---- pairwise jury (rules/jury.smk): off while config jury.pair is empty

    def jury_outputs(self) -> list[str]:
        return [layout.paper(f"jury.{ext}") for ext in ("csv", "md")] if self.jury["pair"] else []

    def jury_predictions(self, wildcards) -> list[str]:
        """The final answers of the jury's two methods on every dataset of one backbone."""
        return [layout.predictions(wildcards.backbone, d, m) for d in self.datasets for m in self.jury["pair"]]

    def jury_syntheses(self, wildcards) -> list[str]:
        """The last round's steps of each of the jury's methods that ends in a chair: its synthesis."""
        return [layout.debate_round(wildcards.backbone, d, m, self.rounds_of(m)[-1], "_steps") for d in self.datasets
                for m in self.jury["pair"] if METHODS[m].protocol is not None and METHODS[m].protocol.final == "chair"]

    def jury_verdict_tables(self, wildcards=None) -> list[str]:
        return [layout.disagreement(b, f"jury_{j}.parquet") for b in self.backbones for j in self.jurors]
