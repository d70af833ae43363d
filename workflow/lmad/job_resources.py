"""What a model stage's job asks the scheduler for (workflow/profiles/, docs/running.md "GPU sizing").

Scheduling only: none of this reaches the backend, the rule params or a cache key.
"""
from __future__ import annotations

# The scheduler settings a served model's server job takes from models.<name>.resources, else
# from the resources of the client job that starts it (the profile's default-resources).
SERVER_PLACEMENT = ("slurm_partition", "slurm_account")
# A GPU job's defaults when models.<name>.resources does not set them.
GPU_JOB_DEFAULTS = {"mem_mb_per_gpu": 32000, "runtime": 720, "cpus_per_gpu": 8}


def model_sizing(models: dict, name: str, served_as_client: bool = True) -> dict:
    """Resources of one model's stage jobs (``models`` is config ``models``). A ``vllm`` model
    asks for ``tensor_parallel_size`` GPUs (``resources.gpu`` overrides; 0 for the CPU build of
    vLLM) plus host memory (MB), wall time (minutes) and CPUs per GPU, each overridable under
    ``models.<name>.resources``. Any other backend asks for no GPU and keeps the profile's
    default resources unless its ``resources:`` entry sets them. A served model's (``serve:
    true``) stage jobs are light clients with no GPU; its server's job gets the sizing
    (``served_as_client=False``)."""
    spec = models[name]
    if spec.get("serve") and served_as_client:
        return {"gpu": 0}
    own = dict(spec.get("resources", {}))
    # where a served model's server job goes; a stage job's partition is the profile's business
    placement = {k: own.pop(k) for k in SERVER_PLACEMENT if k in own}
    placement = placement if spec.get("serve") else {}
    if spec["backend"] != "vllm" and own.get("gpu", 0) != 0:
        raise ValueError(f"config models.{name}.resources.gpu: only vllm models run on GPUs")
    gpus = own.pop("gpu", spec.get("tensor_parallel_size", 1)) if spec["backend"] == "vllm" else 0
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
