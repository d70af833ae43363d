"""A question-level stage job's tables: its questions, samples and predictions, one per work dataset
of the job (lmad.plan.Plan.job_datasets); one job per backbone (and shard) serves every dataset in
one batch."""
from __future__ import annotations

from .. import layout
from ..data.loaders import dataset_type
from ..layout import shard_names
from ..registry import METHODS


class QuestionPlan:
    """Question tables of a run's plan (``plan.questions``): the run's scope, and any other
    axis' tables, come from ``plan`` (lmad.plan.Plan)."""

    def __init__(self, plan):
        self.plan = plan

    def dataset_spec(self, name: str) -> dict:
        # the resolved type is always a parameter: a table written before the benchmark column
        # existed is rebuilt rather than read against the new schema
        spec = self.plan.config["datasets"][name]
        return {"name": name, "seed": self.plan.config["seed"], **spec, "type": dataset_type(name, spec)}

    def dataset_files(self, name: str) -> list[str]:
        """The dataset's local files, as configured (the rule resolves them against the checkout)."""
        spec = self.plan.config["datasets"][name]
        files = [spec["path"]] if spec.get("source", "jsonl") in ("jsonl", "local") else []
        return files + ([spec["aliases_path"]] if spec.get("aliases_path") else [])

    def configured(self, wildcards=None) -> list[str]:
        """The questions of every configured dataset (merged, whatever the shards)."""
        return [layout.questions(d) for d in self.plan.datasets]

    def path(self, backbone: str, work_dataset: str) -> str:
        """A work dataset's questions as a backbone's jobs read them: its own subset under config ``backbone_n``."""
        return layout.questions(work_dataset, backbone if layout.model_of(backbone) in self.plan.backbone_n else None)

    def tables(self, wildcards) -> list[str]:
        """The questions of every work dataset of one job (job_datasets order)."""
        return [self.path(wildcards.backbone, w) for w in self.plan.job_datasets(wildcards)]

    def backbone_subset_inputs(self, wildcards) -> dict[str, str]:
        """The full dataset (its seeded ranking decides the subset) and the work dataset (a shard) to filter."""
        base = next(d for d in self.plan.datasets if wildcards.dataset in shard_names(d, self.plan.shards))
        return {"full": layout.questions(base), "part": layout.questions(wildcards.dataset)}

    def backbone_n_of(self, wildcards) -> int:
        return self.plan.backbone_n[layout.model_of(wildcards.backbone)]

    def sample_tables(self) -> list[str]:
        return [layout.samples("{backbone}", w, "{stage}") for w in self.plan.job_datasets()]

    def proposal_tables(self, wildcards) -> list[str]:
        return [layout.samples(wildcards.backbone, w, "proposals") for w in self.plan.job_datasets(wildcards)]

    @staticmethod
    def stage_temperatures(stage: str, temperatures: list[float]) -> list[float]:
        return [0.0] if stage == "cot" else temperatures

    def shard_parts(self, wildcards) -> list[str]:
        """A per-question table of a dataset, from each of its shards (rule merge_shards)."""
        return [layout.per_question(wildcards.backbone, w, wildcards.table)
                for w in shard_names(wildcards.dataset, self.plan.shards)]

    def prediction_outputs(self, methods=("{method}",)) -> list[str]:
        """Every dataset's predictions of each method, method after method (job_datasets order)."""
        return [layout.predictions("{backbone}", w, m) for m in methods for w in self.plan.job_datasets()]

    def prediction_log(self, name: str = "{method}") -> str:
        return self.plan.job_log("predict", name)

    def prediction_units(self, methods=None):
        """Params: the (dataset, method) units of a predictions job: ``methods`` in order, each over
        the datasets (the job's ``{method}`` wildcard when None)."""
        return lambda w: [[d, m] for m in (methods or [w.method]) for d in self.plan.datasets]

    def vote_samples(self, wildcards) -> list[str]:
        """The samples table a single-round method votes over, of every dataset of the job."""
        return [layout.samples(wildcards.backbone, w, METHODS[wildcards.method].samples)
                for w in self.plan.job_datasets(wildcards)]
