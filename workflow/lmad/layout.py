"""Where every results table lives: the one owner of the ``results/`` layout.

Builders return a table's path; the rules' input functions (lmad.plan) and every
rule's ``output:`` call them, so a path is written once. Passing a wildcard pattern such
as ``"{backbone}"`` for an argument gives the Snakemake pattern of that output.
:func:`parse` is the other direction: library readers that need to know which backbone,
dataset or method a table belongs to ask it, instead of counting path segments.

    results/data/{dataset}.parquet                              questions (configured sample)
    results/{backbone}/data/{dataset}.parquet                   questions (config backbone_n)
    results/{backbone}/{dataset}/samples/{stage}.parquet        cot | proposals
    results/{backbone}/{dataset}/predictions/{method}.parquet
    results/{backbone}/{dataset}/judgments.parquet
    results/{backbone}/{dataset}/{method}/iter{k}/generate.parquet  LMAD generations (one unit's)
    results/{backbone}/lmad/iter{k}/{stage}.parquet                 LMAD's other stage tables (every unit's)
    results/{backbone}/{dataset}/{method}/trace.parquet             LMAD trace
    results/{backbone}/{dataset}/{method}/round{t}{part}.parquet    debate rounds (part: "", _steps, _state)
    results/{backbone}/{dataset}/finalizers.parquet             finalizers on every round of every method
    results/{backbone}/societies/{name}.parquet                 society pool, members, evaluation
    results/{backbone}/analysis/{name}
    results/{backbone}/disagreement/{name}                      disagreement layers (pushback labels)
    results/judge/{judge}/{name}
    results/paper/{name}
    results/manifest.json

A dataset here is a work dataset: a configured dataset or one of its shards
(``{dataset}.shard{s}``, rules/shards.smk). A backbone here is a *run*: the backbone's name,
or ``{backbone}/seed{s}`` for replicate s when the config lists ``seeds`` (:func:`runs`), so
replicates sit side by side under their backbone and never overwrite each other.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

ROOT = "results"
_SHARD = re.compile(r"\.shard\d+$")
_REPLICATE = re.compile(r"^(?P<model>[^/]+)/seed(?P<seed>-?\d+)$")


def run_name(backbone: str, seed: int | None = None) -> str:
    """The results folder of one replicate of a backbone (no seed: the run has no replicates)."""
    return backbone if seed is None else f"{backbone}/seed{seed}"


def runs(backbones, seeds=None) -> list[str]:
    """Every run of a config: each backbone once, or once per seed of ``seeds`` (config order)."""
    return [run_name(b, s) for b in backbones for s in (seeds or [None])]


def model_of(run: str) -> str:
    """The backbone (model name) a run belongs to."""
    m = _REPLICATE.match(run)
    return m["model"] if m else run


def replicate_of(run: str) -> int | None:
    """The replicate seed of a run; None for a run without replicates."""
    m = _REPLICATE.match(run)
    return int(m["seed"]) if m else None


def shard_name(dataset: str, shard) -> str:
    """Shard ``shard`` of a dataset (an index, or a "{shard}" wildcard in a rule pattern)."""
    return f"{dataset}.shard{shard}"


def shard_names(dataset: str, shards: int) -> list[str]:
    """The question sets a dataset runs as: itself, or its N shards."""
    return [dataset] if shards == 1 else [shard_name(dataset, s) for s in range(shards)]


def configured_dataset(work_dataset: str) -> str:
    """The configured dataset a work dataset (itself or one of its shards) belongs to."""
    return _SHARD.sub("", work_dataset)


def questions(dataset: str, backbone: str | None = None) -> str:
    """The questions table; a backbone with its own question count (config ``backbone_n``)
    reads its own subset."""
    return f"{ROOT}/{backbone}/data/{dataset}.parquet" if backbone else f"{ROOT}/data/{dataset}.parquet"


def per_question(backbone: str, dataset: str, table: str) -> str:
    """Any per-question table of a (backbone, dataset); ``table`` is its path below the dataset
    folder without the suffix (``predictions/cot``, ``lmad/trace``): what shards merge."""
    return f"{ROOT}/{backbone}/{dataset}/{table}.parquet"


def samples(backbone: str, dataset: str, stage: str) -> str:
    return per_question(backbone, dataset, f"samples/{stage}")


def predictions(backbone: str, dataset: str, method: str) -> str:
    return per_question(backbone, dataset, f"predictions/{method}")


def judgments(backbone: str, dataset: str) -> str:
    return per_question(backbone, dataset, "judgments")


def method_dir(backbone: str, dataset: str, method: str) -> str:
    """The folder of a multi-step method's own tables (LMAD iterations, debate rounds)."""
    return f"{ROOT}/{backbone}/{dataset}/{method}"


def lmad_table(backbone: str, dataset: str, method: str, iteration, stage: str = "generate") -> str:
    """An LMAD unit's own table of an iteration: its generations (the other stages: :func:`lmad_iteration`)."""
    if stage != "generate":
        raise ValueError(f"LMAD stage {stage!r} has one file of every unit per iteration (lmad.layout.lmad_iteration)")
    return f"{method_dir(backbone, dataset, method)}/iter{iteration}/{stage}.parquet"


#: The LMAD stage tables that hold every (dataset, method) unit of an iteration in one file
#: (:func:`lmad_iteration`); ``generate`` stays one file per unit, as every method's answer tables are
#: (the readers of a method's rounds take it as one).
LMAD_ITERATION_STAGES = ("extract", "localize", "debate", "resolve", "relation", "commit", "state")


def lmad_iteration(backbone: str, iteration, stage: str, shard=None) -> str:
    """One LMAD stage table of every unit of an iteration (lmad.schemas.write_units); ``shard``: the
    shard index (or "{shard}") of a sharded run, whose stage jobs run per shard."""
    if stage not in LMAD_ITERATION_STAGES:
        raise ValueError(f"LMAD stage {stage!r} is not one of {LMAD_ITERATION_STAGES}")
    return f"{ROOT}/{backbone}/lmad/{'' if shard is None else f'shard{shard}/'}iter{iteration}/{stage}.parquet"


def lmad_trace(backbone: str, dataset: str, method: str) -> str:
    return f"{method_dir(backbone, dataset, method)}/trace.parquet"


def debate_round(backbone: str, dataset: str, method: str, round_index, part: str = "") -> str:
    """``part``: "" (the round's answers), "_steps" (its other calls) or "_state"."""
    return f"{method_dir(backbone, dataset, method)}/round{round_index}{part}.parquet"


def finalized(backbone: str, dataset: str) -> str:
    """Every finalizer applied to every saved round of every method (lmad/studies/finalizers/rules.smk)."""
    return per_question(backbone, dataset, "finalizers")


def society(backbone: str, name: str) -> str:
    """A society table of a backbone: ``pool``, ``members`` or ``evaluation`` (rules/societies.smk)."""
    return f"{ROOT}/{backbone}/societies/{name}.parquet"


def analysis(backbone: str, name: str) -> str:
    return f"{ROOT}/{backbone}/analysis/{name}"


def disagreement(backbone: str, name: str) -> str:
    """A backbone's disagreement-layer tables (layer B labels; lmad.studies.disagreement)."""
    return f"{ROOT}/{backbone}/disagreement/{name}"


def judge_validation(judge: str, name: str) -> str:
    return f"{ROOT}/judge/{judge}/{name}"


def paper(name: str) -> str:
    return f"{ROOT}/paper/{name}"


MANIFEST = f"{ROOT}/manifest.json"


def in_results(path) -> bool:
    """Whether a path lies in a results tree (the rules' paths do; a test's own files may not)."""
    return f"/{ROOT}/" in "/" + str(path).replace("\\", "/")


@dataclass(frozen=True)
class Location:
    """What a results path names. Fields a table kind does not have are None."""

    kind: str
    backbone: str | None = None
    dataset: str | None = None
    method: str | None = None
    stage: str | None = None
    iteration: int | None = None
    round: int | None = None
    part: str | None = None


_SEG = r"[^/]+"
_RUN = r"[^/]+(?:/seed-?\d+)?"
# Matched against the end of a path (tests and tools may keep results outside ./results);
# the questions pattern alone needs the root to tell results/data/ from results/{backbone}/data/.
_PATTERNS = [
    ("questions", rf"(?:^|/){ROOT}/(?:(?P<backbone>{_RUN})/)?data/(?P<dataset>{_SEG})\.parquet$"),
    ("samples", rf"(?:^|/)(?P<backbone>{_RUN})/(?P<dataset>{_SEG})/samples/(?P<stage>{_SEG})\.parquet$"),
    ("predictions", rf"(?:^|/)(?P<backbone>{_RUN})/(?P<dataset>{_SEG})/predictions/(?P<method>{_SEG})\.parquet$"),
    ("judgments", rf"(?:^|/)(?P<backbone>{_RUN})/(?P<dataset>{_SEG})/judgments\.parquet$"),
    ("finalized", rf"(?:^|/)(?P<backbone>{_RUN})/(?P<dataset>{_SEG})/finalizers\.parquet$"),
    ("society", rf"(?:^|/)(?P<backbone>{_RUN})/societies/(?P<stage>{_SEG})\.parquet$"),
    ("lmad_iteration", rf"(?:^|/)(?P<backbone>{_RUN})/lmad/(?:shard\d+/)?iter(?P<iteration>\d+)/"
                       rf"(?P<stage>{'|'.join(LMAD_ITERATION_STAGES)})\.parquet$"),
    ("lmad_table", rf"(?:^|/)(?P<backbone>{_RUN})/(?P<dataset>{_SEG})/(?P<method>{_SEG})/iter(?P<iteration>\d+)/"
                   rf"(?P<stage>generate)\.parquet$"),
    ("lmad_trace", rf"(?:^|/)(?P<backbone>{_RUN})/(?P<dataset>{_SEG})/(?P<method>{_SEG})/trace\.parquet$"),
    ("debate_round", rf"(?:^|/)(?P<backbone>{_RUN})/(?P<dataset>{_SEG})/(?P<method>{_SEG})/round(?P<round>\d+)"
                     r"(?P<part>_steps|_state)?\.parquet$"),
    ("disagreement", rf"(?:^|/)(?P<backbone>{_RUN})/disagreement/(?P<stage>{_SEG})\.parquet$"),
    ("analysis", rf"(?:^|/)(?P<backbone>{_RUN})/analysis/(?P<stage>{_SEG})$"),
]
_COMPILED = [(kind, re.compile(pattern)) for kind, pattern in _PATTERNS]


def parse(path) -> Location:
    """The table kind and coordinates of a results path (the inverse of the builders)."""
    text = str(path).replace("\\", "/")
    for kind, pattern in _COMPILED:
        m = pattern.search(text)
        if m:
            fields = m.groupdict()
            for key in ("iteration", "round"):
                if fields.get(key) is not None:
                    fields[key] = int(fields[key])
            if kind == "debate_round":
                fields["part"] = fields["part"] or ""
            return Location(kind, **fields)
    raise ValueError(f"{path}: not a path of the results layout (lmad.layout)")
