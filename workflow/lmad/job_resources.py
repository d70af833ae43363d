"""What a model stage's job asks the scheduler for (workflow/profiles/, docs/running.md "GPU sizing").

Scheduling only: none of this reaches the backend, the rule params or a cache key.
"""
from __future__ import annotations

from .backend_registry import backend, listing, names

# The scheduler settings a served model's server job takes from models.<name>.resources, else
# from the profile's default-resources; never from the client job that happens to start it.
SERVER_PLACEMENT = ("slurm_partition", "slurm_account")
SERVER_FROM_DEFAULTS = (*SERVER_PLACEMENT, "mem_mb", "runtime")
# What a server's sbatch must name: left to sbatch, a GPU server lands on the default partition.
# No account is allowed (a cluster without accounting takes none; lmad.slurm_placement warns).
SERVER_REQUIRED = ("slurm_partition", "mem_mb", "runtime")
# The profile's default-resources, as the Snakefile read them, for the served models' client jobs.
SERVER_DEFAULTS_ENV = "LMAD_SERVER_DEFAULTS"
# A GPU job's defaults when models.<name>.resources does not set them.
GPU_JOB_DEFAULTS = {"mem_mb_per_gpu": 32000, "runtime": 720, "cpus_per_gpu": 8}
# A resource with a unit must be a number (Snakemake cannot leave mem_mb unset per job): a job of
# a model that sets none, in a rule where another model sets it (a served backbone's client beside
# an offline GPU one), gets the profile's default, else Snakemake's own.
def unset_mem_mb(defaults: dict, input) -> int:
    return defaults.get("mem_mb") or max(2 * input.size_mb, 1000)


def model_sizing(models: dict, name: str, served_as_client: bool = True) -> dict:
    """Resources of one model's stage jobs (``models`` is config ``models``). A model of a GPU
    backend (lmad.backend_registry ``gpu``: vllm) asks for ``tensor_parallel_size`` GPUs
    (``resources.gpu`` overrides; 0 for the CPU build of vLLM) plus host memory (MB), wall time
    (minutes) and CPUs per GPU, each overridable under ``models.<name>.resources``. Any other
    backend asks for no GPU and keeps the profile's default resources unless its ``resources:``
    entry sets them. A served model's (``serve: true``) stage jobs are light clients with no GPU;
    its server's job gets the sizing (``served_as_client=False``)."""
    spec = models[name]
    if spec.get("serve") and served_as_client:
        return {"gpu": 0}
    own = dict(spec.get("resources", {}))
    # where a served model's server job goes; a stage job's partition is the profile's business
    placement = {k: own.pop(k) for k in SERVER_PLACEMENT if k in own}
    placement = placement if spec.get("serve") else {}
    on_gpu = backend(spec["backend"]).gpu
    if not on_gpu and own.get("gpu", 0) != 0:
        raise ValueError(f"config models.{name}.resources.gpu: only {listing(names(gpu=True))} models run on GPUs")
    gpus = own.pop("gpu", spec.get("tensor_parallel_size", 1)) if on_gpu else 0
    own.pop("gpu", None)
    if gpus == 0:
        return {"gpu": 0, **own, **placement}
    return {
        **placement,
        "gpu": gpus,
        "mem_mb": own.get("mem_mb", GPU_JOB_DEFAULTS["mem_mb_per_gpu"] * gpus),
        "runtime": own.get("runtime", GPU_JOB_DEFAULTS["runtime"]),
        "cpus_per_gpu": own.get("cpus_per_gpu", GPU_JOB_DEFAULTS["cpus_per_gpu"]),
    }


def profile_defaults(default_resources) -> dict:
    """Plain values of the SERVER_FROM_DEFAULTS keys of Snakemake's default resources
    (``workflow.resource_settings.default_resources``: None; Resources whose strings are
    unevaluated expressions; or, before Snakemake 9.2x, DefaultResources whose ``parsed`` dict
    holds values and functions). One that needs a job's input (e.g. ``2*input.size_mb``) is left out."""
    out = {}
    items = getattr(default_resources, "parsed", default_resources) or {}
    for key in SERVER_FROM_DEFAULTS:
        resource = items.get(key)
        if callable(resource) and key in SERVER_PLACEMENT:  # a name there: evaluated per job, kept as written
            resource = str(getattr(default_resources, "_args", {}).get(key, "")).strip("'\"") or None
        if resource is None or callable(resource):
            continue
        try:
            if hasattr(resource, "is_evaluable") and resource.is_evaluable():
                resource = resource.evaluate(wildcards={}, input=[], attempt=1, threads=1, rulename="server",
                                             async_run=None)
            value = getattr(resource, "value", resource)
        except Exception:
            continue
        if value not in (None, ""):
            out[key] = value
    return out


def server_sizing(sizing: dict, defaults: dict) -> dict:
    """A served model's server job: its model's sizing (model_sizing(served_as_client=False)),
    the profile's defaults where that sets none."""
    return {**{k: defaults[k] for k in SERVER_FROM_DEFAULTS if defaults.get(k) not in (None, "")}, **sizing}


def server_unplaced(name: str, sizing: dict) -> str | None:
    """Why the server job of model ``name`` cannot be submitted as sized, or None."""
    missing = [k for k in SERVER_REQUIRED if sizing.get(k) in (None, "")]
    if not missing:
        return None
    return (f"the {name} server's SLURM job has no {', '.join(missing)}: set models.{name}.resources."
            f"{missing[0]} in the config, or give it in the profile's default-resources "
            f"(--default-resources {' '.join(f'{k}=<value>' for k in missing)}; docs/running.md \"Served models\")")
