import os
import re

from snakemake.exceptions import WorkflowError
from snakemake.utils import validate

from lmad import layout
from lmad.layout import shard_name, shard_names
from lmad.config_checks import check_config, check_method_names, schema_error, serve_by_default
from lmad.data.loaders import dataset_type, resolve_path
from lmad.job_resources import model_sizing
from lmad.protocols.debate import setting_of
from lmad.registry import METHODS, TABLE2_METHODS, names
from lmad.runlock import guard_workflow
from lmad.serve import ON_SLURM_ENV as SERVE_ON_SLURM_ENV
from lmad.societies import split_society
from lmad.tones import tone_role
from lmad.smk import code_hash


# Input functions, wildcard constraints and config checks. Where a table lives is
# lmad.layout's; what a method is, lmad.registry's; these functions only pick the tables
# of a job.

check_method_names(config)  # before the schema, whose error would list every method name
try:
    validate(config, schema="../config/schema/config.schema.yaml")
except WorkflowError:
    raise WorkflowError(schema_error(config, os.path.join(workflow.basedir, "config/schema/config.schema.yaml"))
                        or "config does not match config/schema/config.schema.yaml") from None
# locks left by a killed run of this directory are removed, a live run's never (README "Resume after a kill")
guard_workflow(workflow)
serve_by_default(config)
check_config(config, allow_test_double=os.environ.get("LMAD_ALLOW_TEST_DOUBLE") == "1")

# The LMAD chain (the proposals, then five stage jobs per iteration, each waiting for the last)
# is a run's longest path: its jobs start first whenever a core frees, and the independent
# debate rounds fill the others. Without it Snakemake ran the debate rounds first and the chain
# alone at the end (4 x 500, L = 10: 80 of 172 s with one job running); without it on
# `generate` the proposals waited for other jobs (2.5 s later on the same benchmark).
LMAD_CHAIN_PRIORITY = 10

DATASETS = list(config["datasets"])
# A backbone wildcard names a run (lmad.layout.runs): the backbone, or one replicate of it,
# {backbone}/seed{s}, when the config lists `seeds`. Model lookups go through
# layout.model_of; call seeds through call_seed.
SEEDS = config.get("seeds") or []
BACKBONES = layout.runs(config["backbones"], SEEDS)
JUDGE = config["judge"]["model"]
LMAD_METHODS = names("lmad", config["methods"])
DEBATE_METHODS = [m for m in config["methods"] if METHODS[m].family == "debate"]  # config order


# Sharding (rules/shards.smk): with `shards: N` > 1 every question-level rule runs on the
# shards {dataset}.shard{s} (the "work" datasets); prepare_data, shard_data and merge_shards
# alone see the configured datasets (rule-level constraint DATASET_NAMES), and the judge
# reads the merged tables of every configured dataset.
SHARDS = config["shards"]
DATASET_NAMES = "|".join(re.escape(d) for d in DATASETS)
WORK_DATASETS = [w for d in DATASETS for w in shard_names(d, SHARDS)]


wildcard_constraints:
    dataset="|".join(re.escape(w) for w in WORK_DATASETS),
    shard=r"\d+",
    backbone="|".join(map(re.escape, BACKBONES)),
    stage="cot|proposals",
    # rule predict's methods (single-round) and debate_round's; lmad_predict and debate_predict
    # serve every method of their family in one job, with no method wildcard
    method="|".join(map(re.escape, names("single"))),
    debate_method="|".join(map(re.escape, names("debate"))),  # "+" of a society (lmad.societies)
    iteration=r"\d+",
    debate_round=r"\d+",


# ---- Question-level stage jobs: one per backbone (and shard s: the work datasets
# {dataset}.shard{s}), covering every dataset in one batch.


def job_datasets(wildcards=None):
    """The work datasets of one stage job, in config order: patterns with a {shard}
    wildcard (rule outputs), or concrete for a job's wildcards (input functions)."""
    shard = "{shard}" if wildcards is None else getattr(wildcards, "shard", None)
    return [d if SHARDS == 1 else shard_name(d, shard) for d in DATASETS]


# Per-backbone question counts (config `backbone_n`, e.g. the paper's 150 per dataset for the
# Qwen3.5 rows): such a backbone reads its own subset, the first n of the dataset's seeded
# ranking (rule backbone_questions); every other backbone reads the run's questions.
BACKBONE_N = config.get("backbone_n") or {}


def questions_path(backbone, work_dataset):
    return layout.questions(work_dataset, backbone if layout.model_of(backbone) in BACKBONE_N else None)


def call_seed(wildcards):
    """The seed a job's model calls derive from: its replicate's, else the config's. Question
    sampling, option permutations, batteries and the bootstrap always use config `seed`."""
    replicate = layout.replicate_of(wildcards.backbone)
    return config["seed"] if replicate is None else replicate


def question_tables(wildcards):
    """The question tables of one stage job, in job_datasets order."""
    return [questions_path(wildcards.backbone, w) for w in job_datasets(wildcards)]


def backbone_subset_inputs(wildcards):
    """The full dataset (its seeded ranking decides the subset) and the work dataset (a shard) to filter."""
    base = next(d for d in DATASETS if wildcards.dataset in shard_names(d, SHARDS))
    return {"full": layout.questions(base), "part": layout.questions(wildcards.dataset)}


def sample_tables():
    return [layout.samples("{backbone}", w, "{stage}") for w in job_datasets()]


def proposal_tables(wildcards):
    """The shared proposals of every dataset of the job."""
    return [layout.samples(wildcards.backbone, w, "proposals") for w in job_datasets(wildcards)]


# ---- Predictions: a job that only writes tables is mostly its imports, so one job per backbone
# (and shard) writes every dataset's table: per method for the single-round methods (rule
# predict: at most cot, sc and sc-matched), and one job for all LMAD methods (lmad_predict) and
# one for all debate methods (debate_predict), so their count does not grow with the methods run.


def prediction_outputs(methods=("{method}",)):
    """Every dataset's predictions of each method, method after method (job_datasets order)."""
    return [layout.predictions("{backbone}", w, m) for m in methods for w in job_datasets()]


def prediction_log(name="{method}"):
    return job_log("predict", name)


def prediction_units(methods=None):
    """Params: the (dataset, method) units of a predictions job: ``methods`` in order, each over
    the datasets (the job's ``{method}`` wildcard when None)."""
    return lambda w: [[d, m] for m in (methods or [w.method]) for d in DATASETS]


def vote_samples(wildcards):
    """The samples table a single-round method votes over, of every dataset of the job."""
    return [layout.samples(wildcards.backbone, w, METHODS[wildcards.method].samples) for w in job_datasets(wildcards)]


def stage_temperatures(stage):
    return [0.0] if stage == "cot" else config["agents"]["temperatures"]


def job_log(family, name, folder="logs", ext="log"):
    """Log (or benchmark) path of a per-backbone stage job."""
    shard = "shard{shard}/" if SHARDS > 1 else ""
    return f"{folder}/{{backbone}}/{family}/{shard}{name}.{ext}"


def shard_parts(wildcards):
    """A per-question table of a dataset, from each of its shards (rule merge_shards)."""
    return [layout.per_question(wildcards.backbone, w, wildcards.table) for w in shard_names(wildcards.dataset, SHARDS)]


# ---- Models: what a stage's backend gets, and what its job asks the scheduler for.


def model_spec(name):
    """A model's config entry (``name``: the model, or a run of it), with the converted-weights
    folder for GGUF sources."""
    name = layout.model_of(name)
    spec = {"name": name, **config["models"][name]}
    if "gguf" in spec:
        spec["model"] = f"resources/models/{name}"
    if spec.get("serve"):  # the server's own SLURM job is sized like an offline stage job
        spec["server_resources"] = model_sizing(config["models"], name, served_as_client=False)
    # job sizing (resources:) is scheduling only: it never reaches the backend or params
    return {k: v for k, v in spec.items() if k not in ("gguf", "resources")}


def model_files(name):
    name = layout.model_of(name)
    return [f"resources/models/{name}"] if "gguf" in config["models"][name] else []


def model_threads(name):
    spec = config["models"][layout.model_of(name)]
    return 1 if spec.get("serve") else spec.get("threads", 1)  # a served model's jobs are HTTP clients


# The rules whose jobs call a model, by whose model: the backbone of the job, the judge, a juror.
MODEL_RULES = {
    "backbone": ["generate", "debate_round", "lmad_generate", "lmad_extract", "lmad_localize", "lmad_debate",
                 "lmad_resolve", "sc_matched", "society_pool", "finalizers", "lmad_self_report", "probe"],
    "judge": ["judge", "judge_validation", "pushback_validation", "pushback", "process_scores", "rubric_validation"],
    "juror": ["jury"],
}


def served_client_rules():
    """Model rules every model of which is served: their jobs only talk to the model's server,
    so on SLURM they run on the submit host and hold no allocation while they wait; the
    server is the model's one SLURM job (lmad.serve). The Snakefile makes them local rules."""
    models = {"backbone": config["backbones"], "judge": [JUDGE], "juror": JURORS}
    defined = {r.name for r in workflow.rules}
    return [rule for kind, rules in MODEL_RULES.items() if all(config["models"][m].get("serve") for m in models[kind])
            for rule in rules if rule in defined]


def judge_params():
    """The params of a stage run by the run's judge model (validation, layer B, the rubric)."""
    return {"model": model_spec(JUDGE), "judge_name": JUDGE, "cache_dir": config["cache_dir"]}


def model_params():
    """The params every backbone model stage passes its stage function."""
    return {"model": lambda w: model_spec(w.backbone), "cache_dir": config["cache_dir"]}


def model_resources(name=None, wildcard="backbone", models=None):
    """A model rule's resources (lmad.job_resources): the sizing of a fixed model; for a
    rule whose ``wildcard`` names the model (default {backbone}, over the backbones; rule
    jury: {juror}, over the jurors), one function per resource any of ``models`` sets (a
    model that does not set it gets None, i.e. the resource is left unset)."""
    if name is not None:
        return model_sizing(config["models"], name)
    models = config["backbones"] if models is None else models
    keys = sorted(set().union(*(model_sizing(config["models"], m) for m in models)))
    return {key: _wildcard_resource(key, wildcard) for key in keys}


def _wildcard_resource(key, wildcard):
    return lambda wildcards: model_sizing(config["models"], layout.model_of(getattr(wildcards, wildcard))).get(key)


def dataset_spec(name):
    # the resolved type is always a parameter: a table written before the benchmark column
    # existed is rebuilt rather than read against the new schema
    spec = config["datasets"][name]
    return {"name": name, "seed": config["seed"], **spec, "type": dataset_type(name, spec)}


def dataset_source(wildcards):
    """The dataset's local files, resolved as the stage loads them (relative to the checkout)."""
    spec = config["datasets"][wildcards.dataset]
    files = [spec["path"]] if spec.get("source", "jsonl") in ("jsonl", "local") else []
    files += [spec["aliases_path"]] if spec.get("aliases_path") else []
    return [str(resolve_path(f, workflow.basedir)) for f in files]


# ---- Judge and analysis: every method's predictions, dataset after dataset.


def predictions_of(backbone, dataset):
    return [layout.predictions(backbone, dataset, m) for m in config["methods"]]


def backbone_predictions(wildcards):
    return [p for d in DATASETS for p in predictions_of(wildcards.backbone, d)]


def configured_questions(wildcards=None):
    """The questions of every configured dataset (merged, whatever the shards)."""
    return [layout.questions(d) for d in DATASETS]


def backbone_judgments(wildcards):
    return [layout.judgments(wildcards.backbone, d) for d in DATASETS]


def judge_validation_file(name="validation.parquet"):
    """A file of the run's judge validation (one judge model per run; rules/judge.smk)."""
    return layout.judge_validation(JUDGE, name)


def all_outputs():
    replicates = [layout.analysis(b, "replicates.md") for b in config["backbones"]] if SEEDS else []
    return [layout.analysis(b, name) for b in BACKBONES for name in ("table.md", "accuracy.png")] + replicates + [
        layout.MANIFEST, judge_validation_file("validation.md"), *paper_outputs(), *opinion_outputs()]


# ---- LMAD (rules/lmad.smk): one stage job per (backbone, iteration) serves every
# (dataset, LMAD method) unit; path lists follow lmad_units() order.


def lmad_units():
    """The (dataset, method) pairs of an LMAD stage job, in the order of its path lists."""
    return [[d, m] for d in DATASETS for m in LMAD_METHODS]


def lmad_unit_questions(wildcards):
    return [q for q in question_tables(wildcards) for _ in LMAD_METHODS]


def lmad_paths(stage, backbone="{backbone}", iteration="{iteration}", wildcards=None):
    """One stage's table of every unit, in lmad_units() order (wildcards kept unless given)."""
    return [layout.lmad_table(backbone, w, m, iteration, stage) for w in job_datasets(wildcards) for m in LMAD_METHODS]


def lmad_log(stage, folder="logs", ext="log"):
    return job_log("lmad", f"iter{{iteration}}/{stage}", folder, ext)


def lmad_params():
    """The params every LMAD model stage passes its stage function."""
    return {"units": lmad_units(), **model_params(), "iteration": lambda w: int(w.iteration)}


def lmad_state(wildcards):
    """The states entering iteration k: the previous commit's; none at k = 0 (all active, P empty)."""
    k = int(wildcards.iteration)
    return {"state": lmad_paths("state", wildcards.backbone, k - 1, wildcards)} if k > 0 else {}


def lmad_generate_inputs(wildcards):
    """Iteration 0 reuses the shared self-consistency proposals: zero calls. They are listed for
    the units without a society only (in unit order): a society method's iteration 0 is its
    members' pool calls, so a run of society methods alone never computes the proposals."""
    if int(wildcards.iteration) == 0:
        plain = [m for m in LMAD_METHODS if not METHODS[m].society]
        tables = [layout.samples(wildcards.backbone, w, "proposals") for w in job_datasets(wildcards) for _ in plain]
        return ({"proposals": tables} if tables else {}) | lmad_society(wildcards)
    return lmad_state(wildcards) | lmad_society(wildcards)


def lmad_society(wildcards):
    """The society file, an input of the stages whose agents speak (generate, debate) when the run
    has an LMAD method with a society (lmad+ac-greedy); none otherwise, so a run without one plans
    the same jobs as before."""
    if not any(METHODS[m].society for m in LMAD_METHODS):
        return {}
    return {"members": layout.society(wildcards.backbone, "members")}


def lmad_iteration_tables(stage):
    """Input function: every LMAD method's ``stage`` table of every iteration: method after
    method, dataset after dataset (job_datasets order), iterations in order."""

    def tables(wildcards):
        return [layout.lmad_table(wildcards.backbone, w, m, k, stage) for m in LMAD_METHODS
                for w in job_datasets(wildcards) for k in range(config["lmad"]["iterations"])]

    return tables


def lmad_final_state(wildcards):
    last = config["lmad"]["iterations"] - 1
    return [layout.lmad_table(wildcards.backbone, w, m, last, "state")
            for m in LMAD_METHODS for w in job_datasets(wildcards)]


# ---- Debate baselines (rules/debate.smk): one job per (backbone, method, round) serves every dataset.


def debate_setting(method):
    """Agents, temperatures, rounds and manners of a debate method (config ``debate``)."""
    return setting_of(method, config)


def debate_round_outputs(part):
    return [layout.debate_round("{backbone}", w, "{debate_method}", "{debate_round}", part) for w in job_datasets()]


def debate_round_inputs(wildcards):
    """Round 0 of a protocol that opens like self-consistency, at the persona temperatures,
    is the shared proposals table (zero calls); round t >= 1 reads round t - 1. Plus the
    prompt templates this round uses, so editing one reruns only its rounds. A method with a
    society reads the society file in every round, so a re-selection reruns all of them."""
    t, method = int(wildcards.debate_round), wildcards.debate_method
    setting = debate_setting(method)
    inputs = {"members": layout.society(wildcards.backbone, "members")} if setting.society else {}
    if t == 0 and setting.shares_proposals:
        inputs["proposals"] = proposal_tables(wildcards)
    elif t > 0:
        for name, part in (("previous", ""), ("previous_state", "_state")):
            inputs[name] = [layout.debate_round(wildcards.backbone, w, method, t - 1, part)
                            for w in job_datasets(wildcards)]
    roles = METHODS[method].protocol.prompt_roles(t, t == setting.rounds, setting.manners, setting.shares_proposals)
    return inputs | {f"prompt_{role}": config["prompts"][role] for role in roles + disagreement_roles(method, t)}


def disagreement_roles(method, t):
    """The prompt roles of a debate round besides its protocol's: the tone instruction of a
    toned method (lmad.tones) and the layer-A self-report (config disagreement.self_report),
    both in rounds t >= 1 only; none for a neutral method without layer A (so the default
    config's rounds are unchanged)."""
    if t == 0:
        return []
    role = tone_role(METHODS[method].tone)
    return ([role] if role else []) + (["self_report"] if config["disagreement"]["self_report"] else [])


def debate_round_tables(part):
    """Input function: every debate method's round table (``part``) of every round: method
    after method, dataset after dataset (job_datasets order), rounds in order."""

    def tables(wildcards):
        return [layout.debate_round(wildcards.backbone, w, m, t, part) for m in DEBATE_METHODS
                for w in job_datasets(wildcards) for t in range(debate_setting(m).rounds + 1)]

    return tables


def debate_final_state(wildcards):
    return [layout.debate_round(wildcards.backbone, w, m, debate_setting(m).rounds, "_state")
            for m in DEBATE_METHODS for w in job_datasets(wildcards)]


# ---- Paper tables, figures and trace viewer (rules/paper.smk): tables of every backbone in
# (one backbone where the rule has that wildcard); each helper lists only what the run has.


def _backbones(wildcards):
    return [wildcards.backbone] if wildcards is not None and "backbone" in wildcards.keys() else BACKBONES


def paper_setting(key):
    return config["paper"][key]


def paper_columns():
    """Table 1 columns: the configured list, restricted to methods this run has."""
    return [m for m in paper_setting("columns") if m in config["methods"]]


def paper_judgments(wildcards=None):
    return [layout.judgments(b, d) for b in _backbones(wildcards) for d in DATASETS]


def paper_predictions(wildcards=None):
    return [p for b in BACKBONES for d in DATASETS for p in predictions_of(b, d)]


def paper_proposals(wildcards=None):
    return [layout.samples(b, d, "proposals") for b in BACKBONES for d in DATASETS]


def paper_rounds0(wildcards=None):
    """Round 0 of every configured debate method: headroom measures each against its own opening."""
    return [layout.debate_round(b, d, m, 0) for b in BACKBONES for d in DATASETS for m in DEBATE_METHODS]


def paper_traces(methods=None):
    """Input function: LMAD trace tables of the given LMAD methods (default: Table 2's, all three)."""

    def traces(wildcards):
        wanted = [m for m in (methods or TABLE2_METHODS) if m in config["methods"]]
        return [layout.lmad_trace(b, d, m) for b in _backbones(wildcards) for d in DATASETS for m in wanted]

    return traces


def paper_rounds(wildcards):
    """Every round table of every configured debate method (one backbone when the rule has one)."""
    return [layout.debate_round(b, d, m, t) for b in _backbones(wildcards) for d in DATASETS
            for m in DEBATE_METHODS for t in range(debate_setting(m).rounds + 1)]


def paper_outputs():
    """Everything rule paper builds under results/paper/."""
    out = [layout.paper(f"{name}.{ext}") for name in ("table1", "cost", "headroom") for ext in ("csv", "md")]
    out += [layout.paper(n) for n in ("table1.tex", "accuracy.png", "pareto.png")]
    if all(m in config["methods"] for m in TABLE2_METHODS):
        out += [layout.paper(n) for n in ("table2.csv", "table2.md", "table2.tex", "table2_checks.csv")]
    if DEBATE_METHODS:
        out += [layout.paper(n) for n in ("rounds.png", "dynamics.csv", "dynamics.md")]
    if "lmad" in config["methods"]:
        out.append(layout.paper("lmad_trace.png"))
    out += disagreement_outputs()
    out += process_outputs()
    out += jury_outputs()
    return out + [layout.paper(f"viewer/{b}.html") for b in BACKBONES]


def paper_figure_outputs():
    """Rule paper_figures' outputs: PNG (in the report) and PDF of each figure the config asks
    for; rounds needs a debate method, lmad_trace the lmad method."""
    captions = {"accuracy": "accuracy", "pareto": "pareto", "rounds": "rounds", "lmad_trace": "trace"}
    wanted = ["accuracy", "pareto"] + ["rounds"] * bool(DEBATE_METHODS) + ["lmad_trace"] * ("lmad" in config["methods"])
    out = {}
    for f in wanted:
        out[f"{f}_png"] = paper_report(f"{f}.png", captions[f])
        out[f"{f}_pdf"] = layout.paper(f"{f}.pdf")
    return out


def paper_report(name, caption):
    """A paper output shown in the Snakemake report, with its caption config/report/paper_{caption}.rst."""
    return report(layout.paper(name), caption=f"../config/report/paper_{caption}.rst", category="Paper")


def run_scope(*keys):
    """Params that name the run's scope, for stage functions that take them: ``metric`` (the
    headline), ``backbones``, ``datasets``, ``methods`` (config order)."""
    scope = {"metric": config["analysis"]["metric"], "backbones": BACKBONES, "datasets": DATASETS,
             "methods": config["methods"]}
    return {key: scope[key] for key in keys}


# ---- The warm worker (lmad.worker): a local run's jobs fork from one process that has
# imported polars and the stages; a SLURM job (remote execution) runs its stage itself.

def start_warm_worker():
    if config["warm_worker"] and workflow.local_exec and not (workflow.remote_exec or workflow.subprocess_exec):
        from lmad import worker

        worker.start()


def stop_warm_worker():
    from lmad import worker

    worker.stop()


# ---- Served models (README "Model loads and served mode"): the run's end stops the servers
# its jobs started.

def serve_on_cluster():
    """Under a cluster executor (known only once the run starts) a served model's client jobs,
    local rules, start its server through sbatch (lmad.serve)."""
    if not workflow.local_exec:
        os.environ[SERVE_ON_SLURM_ENV] = "1"


def stop_served_models():
    if any(m.get("serve") for m in config["models"].values()):
        from lmad.serve import stop_all

        stopped = stop_all()
        if stopped:
            print(f"stopped the vLLM servers of: {', '.join(stopped)}")


def cancel_scheduler_timers():
    from lmad.run_end import cancel_scheduler_timers

    cancel_scheduler_timers()


# ---- When Debate Helps (rules/finalizers.smk, readout.smk, societies.smk): every saved round of
# every method, and what these rules add to `rule all` (nothing unless enabled).

FINALIZE = config["finalizers"]


def finalizer_methods():
    """Methods whose rounds are finalized, config order: every debate and LMAD method, and every
    voting method (SC: its one round, the shared proposals; sc-matched: its samples)."""
    return [m for m in config["methods"]
            if METHODS[m].family in ("debate", "lmad") or METHODS[m].samples not in (None, "cot")]


def method_rounds(method):
    """How many answer tables a method saves: R + 1 debate rounds, L LMAD iterations, SC's one."""
    family = METHODS[method].family
    if family == "debate":
        return debate_setting(method).rounds + 1
    return config["lmad"]["iterations"] if family == "lmad" else 1


def round_answers(backbone, dataset, method, t):
    """The answer table of round t of a method (lmad.layout)."""
    family = METHODS[method].family
    if family == "debate":
        return layout.debate_round(backbone, dataset, method, t)
    if family == "lmad":
        return layout.lmad_table(backbone, dataset, method, t, "generate")
    return layout.samples(backbone, dataset, METHODS[method].samples)


def finalizer_round_units():
    """[dataset, method, round] of every answer table a finalizers job reads, in input order."""
    return [[d, m, t] for d in DATASETS for m in finalizer_methods() for t in range(method_rounds(m))]


def finalizer_rounds(wildcards):
    return [round_answers(wildcards.backbone, d, m, t) for d, m, t in finalizer_round_units()]


def finalized_tables(wildcards=None):
    return [layout.finalized(b, d) for b in _backbones(wildcards) for d in DATASETS]


def readout_outputs():
    """What the finalizers and readout rules add to `rule all` (nothing unless enabled)."""
    if not FINALIZE["enabled"]:
        return []
    return [layout.paper(f"{name}.{ext}") for name in ("readout", "headroom_lift") for ext in ("csv", "md", "png")]


SOCIETIES = config["societies"]


def society_outputs():
    """What the society rules add to `rule all` (nothing unless enabled)."""
    if not SOCIETIES["enabled"]:
        return []
    return [layout.paper(f"societies.{ext}") for ext in ("csv", "md")] + [layout.paper("society_debates.csv")]


def society_debate_methods():
    """The run's debating and LMAD methods with a society, each followed by its plain method when the
    run has it."""
    out = []
    for m in DEBATE_METHODS + LMAD_METHODS:
        if METHODS[m].society:
            out += [m] + [b for b in [split_society(m)[0]] if b in config["methods"] and b not in out]
    return list(dict.fromkeys(out))


def society_debate_inputs(wildcards):
    """Rule paper_societies: every backbone's pool (its splits), questions and the predictions of
    society_debate_methods()."""
    methods = society_debate_methods()
    if not methods:
        return {}
    return {"pools": [layout.society(b, "pool") for b in BACKBONES],
            "questions": [questions_path(b, d) for b in BACKBONES for d in DATASETS],
            "predictions": [layout.predictions(b, d, m) for b in BACKBONES for d in DATASETS for m in methods]}


# ---- Disagreement layers (rules/disagreement.smk; README "Disagreement layers"): off unless config
# disagreement.self_report or disagreement.pushback is on, and only with a debating method.

DISAGREEMENT = config["disagreement"]


def disagreement_on():
    return bool(DEBATE_METHODS or LMAD_METHODS) and (DISAGREEMENT["self_report"] or DISAGREEMENT["pushback"])


def persistence_params():
    """Layer C's share of re-asked turns for rules debate_round and lmad_self_report; nothing
    when off (so the default config's jobs keep their params)."""
    share = DISAGREEMENT["persistence"] if DISAGREEMENT["self_report"] else 0
    return {"persistence": share} if share else {}


def disagreement_outputs():
    out = [layout.paper(f"disagreement.{ext}") for ext in ("csv", "md")] if disagreement_on() else []
    return out + ([layout.paper(f"probe.{ext}") for ext in ("csv", "md", "png")] if DISAGREEMENT["probe"] else [])


def pushback_validation_file(name):
    """A file of layer B's validation (the run's judge model; rules/disagreement.smk)."""
    return layout.judge_validation(JUDGE, f"pushback_{name}")


def debate_replies(wildcards):
    """Every round's answers table of every configured debate method of one backbone."""
    return [layout.debate_round(wildcards.backbone, w, m, t) for w in job_datasets(wildcards)
            for m in DEBATE_METHODS for t in range(debate_setting(m).rounds + 1)]


def disagreement_inputs(wildcards):
    """The disagreement table's inputs: the rounds' steps (layer A) when self-reports are on;
    the pushback labels of every backbone and the judge's validation when layer B is on."""
    inputs = {"steps": [], "labels": [], "validation": []}
    if DISAGREEMENT["self_report"]:
        inputs["steps"] = [layout.debate_round(b, d, m, t, "_steps") for b in BACKBONES for d in DATASETS
                           for m in DEBATE_METHODS for t in range(1, debate_setting(m).rounds + 1)]
    if DISAGREEMENT["self_report"] and LMAD_METHODS:
        inputs["lmad_reports"] = [layout.disagreement(b, "lmad_self_report.parquet") for b in BACKBONES]
    if DISAGREEMENT["pushback"]:
        inputs["labels"] = [layout.disagreement(b, "pushback.parquet") for b in BACKBONES]
        inputs["validation"] = [pushback_validation_file("validation.parquet")]
    return inputs


def viewer_label_inputs(wildcards):
    """The trace viewer's disagreement labels of one backbone: only the layers that are on (none
    by default, so the viewer needs no disagreement job)."""
    inputs = {}
    if DISAGREEMENT["self_report"] and DEBATE_METHODS:
        inputs["steps"] = [layout.debate_round(wildcards.backbone, d, m, t, "_steps") for d in DATASETS
                           for m in DEBATE_METHODS for t in range(1, debate_setting(m).rounds + 1)]
    if DISAGREEMENT["self_report"] and LMAD_METHODS:
        inputs["lmad_reports"] = [layout.disagreement(wildcards.backbone, "lmad_self_report.parquet")]
    if DISAGREEMENT["pushback"] and (DEBATE_METHODS or LMAD_METHODS):
        inputs["labels"] = [layout.disagreement(wildcards.backbone, "pushback.parquet")]
        inputs["pushback_validation"] = [pushback_validation_file("validation.parquet")]
    return inputs


def lmad_debate_tables(stage, last=0):
    """Input function: one LMAD stage's table of every dataset, LMAD method and iteration of a
    backbone (iterations 0 .. L - 1 - ``last``)."""

    def tables(wildcards):
        return [layout.lmad_table(wildcards.backbone, w, m, k, stage) for w in job_datasets(wildcards)
                for m in LMAD_METHODS for k in range(config["lmad"]["iterations"] - last)]

    return tables


def pushback_lmad_inputs(wildcards):
    """Layer B reads LMAD's local debates too: every iteration's localization and positions."""
    if not LMAD_METHODS:
        return {}
    return {"lmad_localizations": lmad_debate_tables("localize")(wildcards),
            "lmad_positions": lmad_debate_tables("debate")(wildcards)}


def lmad_tone_prompts():
    """The tone instructions (lmad.tones) of the run's toned LMAD methods: inputs of the local
    debate only (none in a run without one, so its jobs are unchanged)."""
    roles = sorted({tone_role(METHODS[m].tone) for m in LMAD_METHODS} - {None})
    return {f"prompt_{role}": config["prompts"][role] for role in roles}


# ---- Process metrics (rules/process.smk; README "Process metrics"): off unless config process.rubric.


def process_outputs():
    on = config["process"]["rubric"] and (DEBATE_METHODS or LMAD_METHODS)
    return [layout.paper(f"process.{ext}") for ext in ("csv", "md")] if on else []


def process_table_inputs(wildcards):
    """Every backbone's rubric scores, every debate round's answers and every LMAD generation."""
    inputs = {"scores": [layout.disagreement(b, "process_scores.parquet") for b in BACKBONES],
              "rounds": [layout.debate_round(b, d, m, t) for b in BACKBONES for d in DATASETS for m in DEBATE_METHODS
                         for t in range(debate_setting(m).rounds + 1)]}
    if LMAD_METHODS:
        inputs["lmad_generate"] = [layout.lmad_table(b, d, m, k, "generate") for b in BACKBONES for d in DATASETS
                                   for m in LMAD_METHODS for k in range(config["lmad"]["iterations"])]
    if config["process"]["battery_questions"]:
        inputs["rubric_validation"] = [rubric_validation_file("validation.parquet")]
    return inputs


def rubric_validation_file(name):
    """A file of the rubric judge's validation (the run's judge model; rules/process.smk)."""
    return layout.judge_validation(JUDGE, f"rubric_{name}")


# ---- Pairwise jury (rules/jury.smk; README "Pairwise jury"): off while config jury.pair is empty.

JURY = config["jury"]
JURORS = JURY["judges"] or [JUDGE]


def jury_outputs():
    return [layout.paper(f"jury.{ext}") for ext in ("csv", "md")] if JURY["pair"] else []


def jury_predictions(wildcards):
    """The final answers of the jury's two methods on every dataset of one backbone."""
    return [layout.predictions(wildcards.backbone, d, m) for d in DATASETS for m in JURY["pair"]]


def jury_verdict_tables(wildcards=None):
    return [layout.disagreement(b, f"jury_{j}.parquet") for b in BACKBONES for j in JURORS]
