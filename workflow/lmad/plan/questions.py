"""A question-level stage job's tables: its datasets (and shard), questions, samples and predictions;
one job per backbone (and shard) serves every dataset in one batch."""
from __future__ import annotations

from .. import layout
from ..data.loaders import dataset_type
from ..layout import shard_name, shard_names
from ..registry import METHODS


class QuestionPlanning:
    """Question tables of a run's plan (mixed into lmad.plan.Plan, whose attributes they read)."""

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

    def configured_questions(self, wildcards=None) -> list[str]:
        """The questions of every configured dataset (merged, whatever the shards)."""
        return [layout.questions(d) for d in self.datasets]

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
