import os
import re

from snakemake.exceptions import WorkflowError
from snakemake.utils import validate

from lmad import layout
from lmad.config_checks import check_config, check_method_names, schema_error, serve_by_default
from lmad.data.loaders import resolve_path
from lmad.plan import LMAD_CHAIN_PRIORITY, Plan
from lmad.registry import METHODS, TABLE2_METHODS, TRACE_FIGURE_METHODS
from lmad.runlock import guard_workflow
from lmad.backends.serve import ON_SLURM_ENV as SERVE_ON_SLURM_ENV
from lmad.smk import code_hash


# Shared by every file under rules/: the checked config, the run's plan (lmad.plan: which tables each
# job reads and writes) and the few functions that need Snakemake's own objects. Where a table
# lives is lmad.layout's; what a method is, lmad.registry's.

check_method_names(config)  # before the schema, whose error would list every method name
try:
    validate(config, schema="../config/schema/config.schema.yaml")
except WorkflowError:
    raise WorkflowError(schema_error(config, os.path.join(workflow.basedir, "config/schema/config.schema.yaml"))
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
FINALIZE, SOCIETIES, DISAGREEMENT, JURY, JURORS = plan.finalize, plan.societies, plan.disagreement, plan.jury, plan.jurors
DATASET_NAMES = plan.dataset_names()


wildcard_constraints:
    **plan.wildcard_constraints(),


def dataset_source(wildcards):
    """The dataset's local files, resolved as the stage loads them (relative to the checkout)."""
    return [str(resolve_path(f, workflow.basedir)) for f in plan.dataset_files(wildcards.dataset)]


def paper_report(name, caption):
    """A paper output shown in the Snakemake report, with its caption config/report/paper_{caption}.rst."""
    return report(layout.paper(name), caption=f"../config/report/paper_{caption}.rst", category="Paper")


def paper_figure_outputs():
    """Rule paper_figures' outputs: PNG (in the report) and PDF of each figure the run draws."""
    captions = {"accuracy": "accuracy", "pareto": "pareto", "rounds": "rounds", "lmad_trace": "trace"}
    out = {}
    for f in plan.paper_figures():
        out[f"{f}_png"] = paper_report(f"{f}.png", captions[f])
        out[f"{f}_pdf"] = layout.paper(f"{f}.pdf")
    return out


def served_client_rules():
    return plan.served_client_rules({r.name for r in workflow.rules})


# ---- The run's start and end (Snakefile onstart / onsuccess / onerror).


def start_warm_worker():
    """A local run's jobs fork from one process that has imported polars and the stages
    (lmad.worker); a SLURM job (remote execution) runs its stage itself."""
    if config["warm_worker"] and workflow.local_exec and not (workflow.remote_exec or workflow.subprocess_exec):
        from lmad import worker

        worker.start()


def stop_warm_worker():
    from lmad import worker

    worker.stop()


def serve_on_cluster():
    """Under a cluster executor (known only once the run starts) a served model's client jobs,
    local rules, start its server through sbatch (lmad.backends.serve)."""
    if not workflow.local_exec:
        os.environ[SERVE_ON_SLURM_ENV] = "1"


def stop_served_models():
    """The run's end stops the servers its jobs started."""
    if plan.any_served():
        from lmad.backends.serve import stop_all

        stopped = stop_all()
        if stopped:
            print(f"stopped the vLLM servers of: {', '.join(stopped)}")


def cancel_scheduler_timers():
    from lmad.run_end import cancel_scheduler_timers

    cancel_scheduler_timers()
