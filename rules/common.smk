import os
import re

from snakemake.utils import validate

from lmad.data.loaders import resolve_path
from lmad.runlock import guard_workflow
from lmad.protocols.debate import PROTOCOLS as DEBATE_PROTOCOLS, setting_of
from lmad.stages.shards import shard_name, shard_names


validate(config, schema="../config/schema/config.schema.yaml")
# locks left by a killed run of this directory are removed, a live run's never (README "Resume after a kill")
guard_workflow(workflow)


# Sharding (rules/shards.smk): with `shards: N` > 1 every question-level rule runs on the
# shards {dataset}.shard{s} (the "work" datasets); prepare_data, shard_data and merge_shards
# alone see the configured datasets (rule-level constraint DATASET_NAMES), and the judge
# reads the merged tables of every configured dataset.
SHARDS = config["shards"]
DATASET_NAMES = "|".join(re.escape(d) for d in config["datasets"])
WORK_DATASETS = [w for d in config["datasets"] for w in shard_names(d, SHARDS)]


# Model stages over questions run one job per backbone (and shard s: the work datasets
# {dataset}.shard{s}), covering every dataset in one batch.


def job_datasets(wildcards=None):
    """The work datasets of one stage job, in config order: patterns with a {shard}
    wildcard (rule outputs), or concrete for a job's wildcards (input functions)."""
    shard = "{shard}" if wildcards is None else getattr(wildcards, "shard", None)
    return [d if SHARDS == 1 else shard_name(d, shard) for d in config["datasets"]]


# Per-backbone question counts (config `backbone_n`, e.g. the paper's 150 per dataset for the
# Qwen3.5 rows): such a backbone reads results/{backbone}/data/{dataset}.parquet, the first n of the
# dataset's seeded ranking (rule backbone_questions); every other backbone reads results/data/.
BACKBONE_N = config.get("backbone_n") or {}
for _name in BACKBONE_N:
    if _name not in config["backbones"]:
        raise ValueError(f"config backbone_n.{_name}: not one of the backbones {config['backbones']}")


def questions_path(backbone, work_dataset):
    """The questions table a backbone's stages read for one (work) dataset."""
    if backbone in BACKBONE_N:
        return f"results/{backbone}/data/{work_dataset}.parquet"
    return f"results/data/{work_dataset}.parquet"


def question_tables(wildcards):
    """Input function: the question tables of one stage job, in job_datasets order."""
    return [questions_path(wildcards.backbone, w) for w in job_datasets(wildcards)]


def dataset_questions(wildcards):
    return questions_path(wildcards.backbone, wildcards.dataset)


def backbone_subset_inputs(wildcards):
    """The full dataset (its seeded ranking decides the subset) and the work dataset (a shard) to filter."""
    base = next(d for d in config["datasets"] if wildcards.dataset in shard_names(d, SHARDS))
    return {"full": f"results/data/{base}.parquet", "part": f"results/data/{wildcards.dataset}.parquet"}


def sample_tables():
    return [f"results/{{backbone}}/{w}/samples/{{stage}}.parquet" for w in job_datasets()]


def proposal_tables(wildcards, repeat=1):
    """The shared proposals of every dataset of the job (each ``repeat`` times in a row)."""
    return [f"results/{wildcards.backbone}/{w}/samples/proposals.parquet" for w in job_datasets(wildcards)
            for _ in range(repeat)]


def job_log(family, name, folder="logs", ext="log"):
    """Log (or benchmark) path of a per-backbone stage job."""
    shard = "shard{shard}/" if SHARDS > 1 else ""
    return f"{folder}/{{backbone}}/{family}/{shard}{name}.{ext}"


wildcard_constraints:
    dataset="|".join(re.escape(w) for w in WORK_DATASETS),
    shard=r"\d+",
    backbone="|".join(config["backbones"]),
    stage="cot|proposals",
    method="cot|sc",
    # LMAD methods get their own wildcard so rule predict (cot|sc) never matches them
    lmad_method="lmad|lmad-concrete|lmad-always",
    iteration=r"\d+",
    # debate baselines (rules/debate.smk): one regex of every debate method name, own wildcard
    # for the same reason as lmad_method
    debate_method="|".join(DEBATE_PROTOCOLS),
    debate_round=r"\d+",


# The deterministic test double exists for the test suite; a user config cannot use it.
if os.environ.get("LMAD_ALLOW_TEST_DOUBLE") != "1":
    for _name, _model in config["models"].items():
        if _model["backend"] == "scripted":
            raise ValueError(
                f"config models.{_name}.backend: 'scripted' is the test double and is only "
                "allowed in the test suite (LMAD_ALLOW_TEST_DOUBLE=1)"
            )
for _name in [*config["backbones"], config["judge"]["model"]]:
    if _name not in config["models"]:
        raise ValueError(f"config: model {_name!r} is used but not defined under 'models'")


# Which samples table each single-round method votes over.
PREDICT_SOURCE = {"cot": "cot", "sc": "proposals"}


def model_spec(name):
    """A model's config entry, with the converted-weights folder for GGUF sources."""
    spec = {"name": name, **config["models"][name]}
    if "gguf" in spec:
        spec["model"] = f"resources/models/{name}"
    if spec.get("serve"):  # the server's own SLURM job is sized like an offline stage job
        spec["server_resources"] = model_sizing(name, served_as_client=False)
    # job sizing (resources:) is scheduling only: it never reaches the backend or params
    return {k: v for k, v in spec.items() if k not in ("gguf", "resources")}


def model_files(name):
    return [f"resources/models/{name}"] if "gguf" in config["models"][name] else []


def model_threads(name):
    return config["models"][name].get("threads", 1)


def dataset_spec(name):
    return {"name": name, "seed": config["seed"], **config["datasets"][name]}


def dataset_source(wildcards):
    """The dataset's local files, resolved as the stage loads them (relative to the checkout)."""
    spec = config["datasets"][wildcards.dataset]
    files = [spec["path"]] if spec.get("source", "jsonl") == "jsonl" else []
    files += [spec["aliases_path"]] if spec.get("aliases_path") else []
    return [str(resolve_path(f, workflow.basedir)) for f in files]


def stage_temperatures(stage):
    return [0.0] if stage == "cot" else config["agents"]["temperatures"]


def predictions_of(backbone, dataset):
    return expand(
        "results/{backbone}/{dataset}/predictions/{method}.parquet",
        backbone=backbone,
        dataset=dataset,
        method=config["methods"],
    )


def shard_parts(wildcards):
    """A per-question table of a dataset, from each of its shards (rule merge_shards)."""
    return [f"results/{wildcards.backbone}/{w}/{wildcards.table}.parquet" for w in shard_names(wildcards.dataset, SHARDS)]


def judge_inputs(wildcards):
    """Every method's predictions, dataset after dataset (the judge splits them evenly)."""
    return [p for d in config["datasets"] for p in predictions_of(wildcards.backbone, d)]


def judge_validation_file(name="validation.parquet"):
    """A file of the run's judge validation (one judge model per run; rules/judge.smk)."""
    return f"results/judge/{config['judge']['model']}/{name}"


def analysis_judgments(wildcards):
    return expand(
        "results/{backbone}/{dataset}/judgments.parquet",
        backbone=wildcards.backbone,
        dataset=config["datasets"],
    )


def analysis_predictions(wildcards):
    return [p for d in config["datasets"] for p in predictions_of(wildcards.backbone, d)]


def all_outputs():
    return expand(
        "results/{backbone}/analysis/{name}",
        backbone=config["backbones"],
        name=["table.md", "accuracy.png"],
    ) + ["results/manifest.json", judge_validation_file("validation.md"), *paper_outputs()]


# ---- LMAD (rules/lmad.smk): iteration k of a method lives in results/{backbone}/{dataset}/{method}/iter{k}/;
# one stage job per (backbone, iteration) serves every (dataset, LMAD method) unit.

LMAD_METHODS = [m for m in ("lmad", "lmad-concrete", "lmad-always") if m in config["methods"]]


def lmad_units():
    """The (dataset, method) pairs of an LMAD stage job, in the order of its path lists."""
    return [[d, m] for d in config["datasets"] for m in LMAD_METHODS]


def lmad_unit_questions(wildcards):
    return [q for q in question_tables(wildcards) for _ in LMAD_METHODS]


def lmad_paths(stage, backbone="{backbone}", iteration="{iteration}", wildcards=None):
    """One stage's table of every unit, in lmad_units() order (wildcards kept unless given)."""
    return [f"results/{backbone}/{w}/{m}/iter{iteration}/{stage}.parquet" for w in job_datasets(wildcards)
            for m in LMAD_METHODS]


def lmad_log(stage, folder="logs", ext="log"):
    return job_log("lmad", f"iter{{iteration}}/{stage}", folder, ext)


def lmad_dir(wildcards):
    return f"results/{wildcards.backbone}/{wildcards.dataset}/{wildcards.lmad_method}"


def lmad_state(wildcards):
    """The states entering iteration k: the previous commit's; none at k = 0 (all active, P empty)."""
    k = int(wildcards.iteration)
    return {"state": lmad_paths("state", wildcards.backbone, k - 1, wildcards)} if k > 0 else {}


def lmad_generate_inputs(wildcards):
    """Iteration 0 reuses the shared self-consistency proposals: zero calls."""
    if int(wildcards.iteration) == 0:
        return {"proposals": proposal_tables(wildcards, repeat=len(LMAD_METHODS))}
    return lmad_state(wildcards)


def lmad_iteration_tables(stage):
    """Input function: one method's ``stage`` table of every iteration, in order."""

    def tables(wildcards):
        return [f"{lmad_dir(wildcards)}/iter{k}/{stage}.parquet" for k in range(config["lmad"]["iterations"])]

    return tables


def lmad_final_state(wildcards):
    return f"{lmad_dir(wildcards)}/iter{config['lmad']['iterations'] - 1}/state.parquet"


# ---- Debate baselines (rules/debate.smk): round t of a method lives in
# results/{backbone}/{dataset}/{debate_method}/round{t}.parquet (+ _steps, _state)


def debate_setting(method):
    """Agents, temperatures, rounds and manners of a debate method (config ``debate``)."""
    return setting_of(method, config)


# A bad per-method setting fails here, naming the key, before any job runs.
for _method in config["methods"]:
    if _method in DEBATE_PROTOCOLS:
        debate_setting(_method)


def debate_dir(wildcards):
    return f"results/{wildcards.backbone}/{wildcards.dataset}/{wildcards.debate_method}"


def debate_round_tables_of(wildcards, name):
    """``name`` (e.g. ``round2_state``) of the job's method on every dataset of the job."""
    return [f"results/{wildcards.backbone}/{w}/{wildcards.debate_method}/{name}.parquet"
            for w in job_datasets(wildcards)]


def debate_round_outputs(suffix):
    return [f"results/{{backbone}}/{w}/{{debate_method}}/round{{debate_round}}{suffix}.parquet" for w in job_datasets()]


def debate_round_inputs(wildcards):
    """Round 0 of a protocol that opens like self-consistency, at the persona temperatures,
    is the shared proposals table (zero calls); round t >= 1 reads round t - 1. Plus the
    prompt templates this round uses, so editing one reruns only its rounds."""
    t, method = int(wildcards.debate_round), wildcards.debate_method
    setting = debate_setting(method)
    inputs = {}
    if t == 0 and setting.shares_proposals:
        inputs["proposals"] = proposal_tables(wildcards)
    elif t > 0:
        inputs["previous"] = debate_round_tables_of(wildcards, f"round{t - 1}")
        inputs["previous_state"] = debate_round_tables_of(wildcards, f"round{t - 1}_state")
    roles = DEBATE_PROTOCOLS[method].prompt_roles(t, t == setting.rounds, setting.manners, setting.shares_proposals)
    return inputs | {f"prompt_{role}": config["prompts"][role] for role in roles}


def debate_round_tables(suffix):
    """Input function: one method's round{t}{suffix}.parquet of every round, in order."""

    def tables(wildcards):
        rounds = debate_setting(wildcards.debate_method).rounds
        return [f"{debate_dir(wildcards)}/round{t}{suffix}.parquet" for t in range(rounds + 1)]

    return tables


def debate_final_state(wildcards):
    return f"{debate_dir(wildcards)}/round{debate_setting(wildcards.debate_method).rounds}_state.parquet"


# ---- Scale-out (workflow/profiles/, README "Run on SLURM"): what a model stage's job asks
# for. Every model stage declares its resources as `**model_resources()` (stages over
# {backbone}) or `**model_resources(name)` (stages that always run one model, the judge).

# A GPU job's defaults when models.<name>.resources does not set them.
GPU_JOB_DEFAULTS = {"mem_mb_per_gpu": 32000, "runtime": 720, "cpus_per_gpu": 8}


def model_sizing(name, served_as_client=True):
    """Resources of one model's stage jobs. A ``vllm`` model asks for
    ``tensor_parallel_size`` GPUs (``resources.gpu`` overrides; 0 for the CPU build of
    vLLM) plus host memory (MB), wall time (minutes) and CPUs per GPU, each overridable
    under ``models.<name>.resources``. Any other backend asks for no GPU and keeps the
    profile's default resources unless its ``resources:`` entry sets them. A served
    model's stage jobs are light clients (no GPU); its server gets the sizing instead."""
    spec = config["models"][name]
    if spec.get("serve") and served_as_client:
        return {"gpu": 0}
    own = dict(spec.get("resources", {}))
    if spec["backend"] != "vllm" and own.get("gpu", 0) != 0:
        raise ValueError(f"config models.{name}.resources.gpu: only vllm models run on GPUs")
    gpus = own.pop("gpu", spec.get("tensor_parallel_size", 1)) if spec["backend"] == "vllm" else 0
    own.pop("gpu", None)
    if gpus == 0:
        return {"gpu": 0, **own}
    return {
        "gpu": gpus,
        "mem_mb": own.get("mem_mb", GPU_JOB_DEFAULTS["mem_mb_per_gpu"] * gpus),
        "runtime": own.get("runtime", GPU_JOB_DEFAULTS["runtime"]),
        "cpus_per_gpu": own.get("cpus_per_gpu", GPU_JOB_DEFAULTS["cpus_per_gpu"]),
    }


def _backbone_resource(key):
    return lambda wildcards: model_sizing(wildcards.backbone).get(key)


def model_resources(name=None):
    """The ``resources:`` of a model rule: ``model_sizing(name)`` for a fixed model; for
    a rule over {backbone}, one function per resource any configured backbone sets (a
    backbone that does not set it gets None, i.e. the resource is left unset)."""
    if name is not None:
        return model_sizing(name)
    keys = sorted(set().union(*(model_sizing(b) for b in config["backbones"])))
    return {key: _backbone_resource(key) for key in keys}



# ---- Paper tables, figures and trace viewer (rules/paper.smk): Parquet of every backbone in,
# results/paper/ out. Each helper lists only what exists for the configured methods.

PAPER_GATE_METHODS = ["lmad", "lmad-concrete", "lmad-always"]  # Table 2 needs all three


def paper_setting(key):
    return config["paper"][key]


def paper_columns():
    """Table 1 columns: the configured list, restricted to methods this run has."""
    return [m for m in paper_setting("columns") if m in config["methods"]]


def paper_judgments(wildcards=None):
    backbones = [wildcards.backbone] if wildcards is not None and "backbone" in wildcards.keys() else config["backbones"]
    return expand("results/{backbone}/{dataset}/judgments.parquet", backbone=backbones, dataset=config["datasets"])


def paper_predictions(wildcards=None):
    return [p for b in config["backbones"] for d in config["datasets"] for p in predictions_of(b, d)]


def paper_questions(wildcards=None):
    return expand("results/data/{dataset}.parquet", dataset=config["datasets"])


def paper_proposals(wildcards=None):
    return expand("results/{backbone}/{dataset}/samples/proposals.parquet", backbone=config["backbones"],
                  dataset=config["datasets"])


def paper_rounds0(wildcards=None):
    """Round 0 of every configured debate method: headroom measures each against its own opening."""
    return [f"results/{b}/{d}/{m}/round0.parquet" for b in config["backbones"] for d in config["datasets"]
            for m in config["methods"] if m in DEBATE_PROTOCOLS]


def paper_traces(methods=None):
    """Input function: LMAD trace tables of the given LMAD methods (default: all configured)."""

    def traces(wildcards):
        backbones = [wildcards.backbone] if "backbone" in wildcards.keys() else config["backbones"]
        wanted = [m for m in (methods or PAPER_GATE_METHODS) if m in config["methods"]]
        return expand("results/{backbone}/{dataset}/{method}/trace.parquet", backbone=backbones,
                      dataset=config["datasets"], method=wanted)

    return traces


def paper_rounds(wildcards):
    """Every round{t}.parquet of every configured debate method (one backbone when the rule has one)."""
    backbones = [wildcards.backbone] if "backbone" in wildcards.keys() else config["backbones"]
    return [f"results/{b}/{d}/{m}/round{t}.parquet" for b in backbones for d in config["datasets"]
            for m in config["methods"] if m in DEBATE_PROTOCOLS for t in range(debate_setting(m).rounds + 1)]


def paper_outputs():
    """Everything rule paper builds under results/paper/."""
    out = [f"results/paper/{name}.{ext}" for name in ("table1", "cost", "headroom") for ext in ("csv", "md")]
    out += ["results/paper/table1.tex", "results/paper/accuracy.png", "results/paper/pareto.png"]
    if all(m in config["methods"] for m in PAPER_GATE_METHODS):
        out += ["results/paper/table2.csv", "results/paper/table2.md", "results/paper/table2.tex",
                "results/paper/table2_checks.csv"]
    if any(m in DEBATE_PROTOCOLS for m in config["methods"]):
        out += ["results/paper/rounds.png", "results/paper/dynamics.csv", "results/paper/dynamics.md"]
    if "lmad" in config["methods"]:
        out.append("results/paper/lmad_trace.png")
    return out + expand("results/paper/viewer/{backbone}.html", backbone=config["backbones"])


def paper_code(*functions):
    """Short hash of the source of the functions (dotted names) that make one paper artifact.
    As a rule param it reruns that rule alone when its code changes (params are a rerun trigger;
    the 2-line script is the same for every paper rule)."""
    import hashlib
    import importlib
    import inspect

    digest = hashlib.sha256()
    for name in functions:
        where, _, attr = name.rpartition(".")
        digest.update(inspect.getsource(getattr(importlib.import_module(where), attr)).encode())
    return digest.hexdigest()[:16]


# ---- Served models (README "Served mode"): the run's end stops the servers its jobs started.

def stop_served_models():
    if any(m.get("serve") for m in config["models"].values()):
        from lmad.serve import stop_all

        stopped = stop_all()
        if stopped:
            print(f"stopped the vLLM servers of: {', '.join(stopped)}")
