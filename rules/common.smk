import json
import os
import re
import shlex
import sys

import jsonschema
from snakemake.exceptions import WorkflowError

# This checkout's library, whatever `pip install -e` put on the path: the parse below, every
# job's script (workflow/scripts/stage.py) and the warm worker (both inherit PYTHONPATH) and the
# rules' code hashes (lmad.smk.stage) read the same files.
LIBRARY = os.path.join(workflow.basedir, "workflow")
sys.path.insert(0, LIBRARY)
os.environ.update(PYTHONPATH=os.pathsep.join(filter(None, [LIBRARY, os.environ.get("PYTHONPATH")])))

import lmad

# a process that imported another lmad before the parse (Snakemake's Python API) would keep it
if os.path.realpath(os.path.dirname(lmad.__file__)) != os.path.realpath(os.path.join(LIBRARY, "lmad")):
    raise WorkflowError(f"lmad was imported from {os.path.dirname(lmad.__file__)}, not from this checkout's {LIBRARY}")

from lmad.heap import settle as settle_heap, snakemake_command

# Snakemake's command line never scans what its imports left again (lmad.heap): the parse's
# imports and the DAG then take two full collections instead of three
if snakemake_command(sys.argv):
    settle_heap()

from lmad import layout
from lmad.config_schema import SCHEMA as CONFIG_SCHEMA, validate as validate_config
from lmad.config_checks import check_config, check_method_names, schema_error, serve_by_default
from lmad.data.loaders import resolve_path
from lmad.job_resources import SERVER_DEFAULTS_ENV, profile_defaults
from lmad.plan import LMAD_CHAIN_PRIORITY, Plan
from lmad.registry import METHODS, TABLE2_METHODS, TRACE_FIGURE_METHODS
from lmad.runlock import guard_workflow
from lmad.backends.serve import ON_SLURM_ENV as SERVE_ON_SLURM_ENV
from lmad.smk import stage
from lmad.stage_command import STAGE_COMMAND as STAGE, attach as attach_stage_jobs


# Shared by every file under rules/: the checked config, the run's plan (lmad.plan: which tables each
# job reads and writes) and the few functions that need Snakemake's own objects. Where a table
# lives is lmad.layout's; what a method is, lmad.registry's.

check_method_names(config)  # before the schema, whose error would list every method name
try:
    validate_config(config)  # this checkout's schema (the lmad imported is, above); defaults filled in
except jsonschema.ValidationError:
    raise WorkflowError(schema_error(config, str(CONFIG_SCHEMA))
                        or "config does not match config/schema/config.schema.yaml") from None
# locks left by a killed run of this directory are removed, a live run's never
# (docs/running.md "Resume after a kill")
guard_workflow(workflow)
serve_by_default(config)
check_config(config, allow_test_double=os.environ.get("LMAD_ALLOW_TEST_DOUBLE") == "1")

plan = Plan(config)
# the run's scope, as the rule files name it; a backbone wildcard names a run (a replicate
# {backbone}/seed{s} when the config lists `seeds`)
DATASETS, BACKBONES, SEEDS, JUDGE = plan.datasets, plan.backbones, plan.seeds, plan.judge
LMAD_METHODS, DEBATE_METHODS, SHARDS = plan.lmad_methods, plan.debate_methods, plan.shards
SOCIETIES = plan.societies_config
DATASET_NAMES = plan.dataset_names()

# Each rule that runs library code names its stage function once, in its params
# (`**stage("module:function")`, lmad.smk.stage: the name and its code hash), and runs the one
# script workflow/scripts/stage.py as its command, `shell: STAGE` (lmad.stage_command; the
# Snakefile attaches the job's line once every rule is defined). Each model rule spreads its
# kind's repeated sections (lmad.plan.ModelRule) into its own, `**M.input`, `**M.params`,
# `M.threads`, `**M.resources`.
BACKBONE_MODEL, JUDGE_MODEL = (plan.models.rule(k) for k in ("backbone", "judge"))
# STAGE's interpreter and script: this process's interpreter, or the job's environment's where
# Snakemake deploys one (--sdm conda, apptainer), as its script directive would choose
STAGE_RUNNER = " ".join(shlex.quote(p) for p in (
    "python" if workflow.deployment_settings.deployment_method else sys.executable,
    os.path.join(LIBRARY, "scripts", "stage.py")))


wildcard_constraints:
    **plan.wildcard_constraints(),


def run_path(path):
    """``path`` as a param or input names it: relative to the working directory when inside it,
    so a run moved or copied with its checkout has nothing to redo; absolute outside it, so
    moving the run directory alone does not change it either."""
    rel = os.path.relpath(path)
    return os.path.abspath(path) if rel == os.pardir or rel.startswith(os.pardir + os.sep) else rel


def dataset_source(wildcards):
    """The dataset's local files, resolved as the stage loads them (relative to the checkout)."""
    return [run_path(resolve_path(f, workflow.basedir)) for f in plan.questions.dataset_files(wildcards.dataset)]


def paper_report(name, caption):
    """A paper output shown in the Snakemake report, with its caption config/report/paper_{caption}.rst."""
    return report(layout.paper(name), caption=f"../config/report/paper_{caption}.rst", category="Paper")


def paper_du_outputs():
    """Rule paper_du's outputs: each Du et al. table the run has as CSV, and as markdown in the report
    with its caption config/report/paper_du_{table}.rst."""
    out = {}
    for key, path in plan.paper.du_output_files().items():
        table, ext = key.rsplit("_", 1)
        out[key] = paper_report(path.removeprefix(layout.paper("")), f"du_{table}") if ext == "md" else path
    return out


def paper_figure_outputs():
    """Rule paper_figures' outputs: PNG (in the report) and PDF of each figure the run draws."""
    captions = {"accuracy": "accuracy", "pareto": "pareto", "lmad_trace": "trace"}
    out = {}
    for f in plan.paper.figures():
        out[f"{f}_png"] = paper_report(f"{f}.png", captions[f])
        out[f"{f}_pdf"] = layout.paper(f"{f}.pdf")
    return out


def served_client_rules():
    return plan.models.served_client_rules({r.name for r in workflow.rules})


# ---- The run's start and end (Snakefile onstart / onsuccess / onerror).


def start_warm_worker():
    """A local run's jobs fork from one process that has imported polars and the stages, and
    those that load an embedded model from one that has imported its runtime too (lmad.worker);
    a SLURM job (remote execution) runs its stage itself."""
    if config["warm_worker"] and workflow.local_exec and not (workflow.remote_exec or workflow.subprocess_exec):
        from lmad import worker
        from lmad.backend_registry import warm_backends

        # only where a job to run loads such a model: a rerun of the analyses imports no torch
        worker.start(warm_backends(list(job.params) for job in workflow.dag.needrun_jobs()))


def stop_warm_worker():
    from lmad import worker

    worker.stop()


def refuse_report_before_run():
    """`snakemake --report` before the run has made its files: say what to run first."""
    import sys

    from lmad.report_check import missing_for_report, report_only

    if report_only(sys.argv) and (missing := missing_for_report(plan.all_outputs())):
        raise WorkflowError(missing)


# A served model's server is sized from its model's config, then these (the profile's
# default-resources), never from the client job that starts it: published to the clients'
# scripts (local rules: they inherit this process's environment).
SERVER_DEFAULTS = profile_defaults(workflow.resource_settings.default_resources)
os.environ[SERVER_DEFAULTS_ENV] = json.dumps(SERVER_DEFAULTS)
plan.default_resources = SERVER_DEFAULTS


def check_slurm_placement():
    """A SLURM run names the partition or account its submissions lack before its first sbatch,
    and stops there when a served model's server cannot be placed."""
    if not workflow.local_exec:
        from snakemake.logging import logger

        from lmad.slurm_placement import check_slurm_placement

        try:
            check_slurm_placement(workflow.dag, SERVER_DEFAULTS, logger.warning)
        except ValueError as err:
            raise WorkflowError(f"lmad: {err}") from None


def serve_on_cluster():
    """Under a cluster executor (known only once the run starts) a served model's client jobs,
    local rules, start its server through sbatch (lmad.backends.serve)."""
    if not workflow.local_exec:
        os.environ[SERVE_ON_SLURM_ENV] = "1"


def stop_served_models():
    """The run's end stops the servers its jobs started."""
    if plan.models.any_served():
        from lmad.backends.serve import stop_all

        stopped = stop_all()
        if stopped:
            print(f"stopped the vLLM servers of: {', '.join(stopped)}")


def cancel_scheduler_timers():
    from lmad.run_end import cancel_scheduler_timers

    cancel_scheduler_timers()
