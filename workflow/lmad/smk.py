"""The one bridge between a Snakemake rule and a library function.

A rule's script is two lines: it hands the dotted name of a stage function to
``run_rule``, which sends the stage's logging to the rule's ``log:`` file and calls the
function with the rule's named inputs, outputs and params as keyword arguments, plus a
``provenance`` dict for the Parquet metadata; in a child of the warm worker
(lmad.worker) when a local run has one, else in the script's own process.
"""
from __future__ import annotations

import hashlib
import importlib
import json
import logging
import resource
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable


# Inputs that only order jobs (the stage reads them through its model spec).
DEPENDENCY_ONLY = {"weights"}


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value if isinstance(value, (str, int, float, bool, type(None))) else str(value)


def _named(items) -> dict[str, Any]:
    """Named entries of a Snakemake Namedlist; file lists become plain lists."""
    return {k: list(v) if isinstance(v, list) else v for k, v in items.items()}


def provenance(rule: str, wildcards: dict, params: dict, prompt_files: list[str]) -> dict:
    blob = json.dumps(_jsonable(params), sort_keys=True)
    return {
        "rule": rule, **{f"wildcard.{k}": v for k, v in wildcards.items()},
        "config_sha": hashlib.sha256(blob.encode()).hexdigest()[:16],
        "prompt_sha": {Path(p).name: hashlib.sha256(Path(p).read_bytes()).hexdigest()[:16] for p in prompt_files},
    }


def stats_path(log_file: str | Path) -> Path:
    """Where a job's run statistics sit: beside its log (``judge.log`` -> ``judge.stats.json``)."""
    return Path(log_file).with_suffix(".stats.json")


def _finish_backends(log_file: str | None) -> None:
    """Close the call stores the job opened (lmad.backends.close_stores), then write its run
    statistics beside its log."""
    backends = sys.modules.get("lmad.backends")  # a job that never imported it called no model
    if backends is None or not backends.OPENED:
        return
    try:
        backends.close_stores()
    finally:
        if log_file:
            _write_stats(log_file)


def _write_stats(log_file: str) -> None:
    """The job's calls, cache hits and model loads as JSON (read by the manifest), written
    from the backends' counters, not from log text: vLLM replaces the logging setup of the
    process it starts in, so a job's last log lines may never reach its log."""
    backends = sys.modules.get("lmad.backends")  # a job that never imported it called no model
    if backends is None or not backends.OPENED:
        return
    path = stats_path(log_file)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(backends.run_stats(), sort_keys=True))
    tmp.replace(path)


def _profiled(fn: Callable[..., None], log_file: str | None) -> Callable[..., None]:
    """``fn``, under cProfile when ``LMAD_PROFILE`` is set (a developer's switch for the
    scale benchmark): the stats go beside the job's log as ``<log>.prof``."""
    import os

    if not os.environ.get("LMAD_PROFILE") or not log_file:
        return fn

    def run(**kwargs):
        import cProfile

        profile = cProfile.Profile()
        try:
            profile.runcall(fn, **kwargs)
        finally:
            profile.dump_stats(str(Path(log_file).with_suffix(".prof")))
    return run


@dataclass(frozen=True)
class Job:
    """What a stage job runs, in a form the warm worker's child can be handed (pickled)."""
    rule: str
    log: str | None
    stage: str | Callable[..., None]  # "module:function", or the function itself
    kwargs: dict[str, Any]


def stage_function(stage: str | Callable[..., None]) -> Callable[..., None]:
    if callable(stage):
        return stage
    module, _, name = stage.partition(":")
    return getattr(importlib.import_module(module), name)


def served_placement(params: dict, resources: dict) -> dict:
    """The model-spec params of a served model, with the job's own partition and account (the
    profile's default-resources) filled into its server's sizing where the model sets none.
    Resources, not params: a scheduler setting must not make a finished job look outdated."""
    from lmad.job_resources import SERVER_PLACEMENT

    out = {}
    for key, value in params.items():
        if isinstance(value, dict) and value.get("serve") and isinstance(value.get("server_resources"), dict):
            placement = {k: resources[k] for k in SERVER_PLACEMENT if resources.get(k)}
            out[key] = {**value, "server_resources": placement | value["server_resources"]}
    return out


def run_rule(smk, stage: str | Callable[..., None]) -> None:
    """Run a rule's stage function with its named inputs, outputs and params. ``stage`` is
    ``"module:function"`` in the rules' scripts, so that a job the warm worker takes
    (lmad.worker) never imports the stage itself; it runs here when no worker takes it."""
    inputs, outputs, params = _named(smk.input), _named(smk.output), _named(smk.params)
    inputs = {k: v for k, v in inputs.items() if k not in DEPENDENCY_ONLY}
    clash = (set(inputs) & set(outputs)) | (set(inputs) & set(params)) | (set(outputs) & set(params))
    if clash:
        raise ValueError(f"rule {smk.rule}: names used twice among input/output/params: {sorted(clash)}")
    prompts = [v for k, v in inputs.items() if k.startswith("prompt") and isinstance(v, str)]
    kwargs = {**inputs, **outputs, **params,
              "provenance": provenance(smk.rule, dict(smk.wildcards.items()), params, prompts)}
    kwargs.update(served_placement(params, dict(getattr(smk, "resources", {}).items())))
    job = Job(smk.rule, smk.log[0] if smk.log else None, stage, kwargs)
    status = None
    if isinstance(stage, str):
        from lmad.worker import run_in_worker

        status = run_in_worker(job)
    if status is None:
        execute(job)
    elif status:
        raise SystemExit(status)


def execute(job: Job, forked: bool = False) -> None:
    """A job's stage, logging to its log file, with its run statistics beside it; ``forked``:
    in a child of the warm worker (whose CPU is the child's own, imports not included)."""
    if job.log:
        stats_path(job.log).unlink(missing_ok=True)  # a rerun that calls no model leaves none
    logging.basicConfig(filename=job.log, filemode="w", level=logging.INFO, force=True,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    start = time.time()
    try:
        _profiled(stage_function(job.stage), job.log)(**job.kwargs)
    except Exception:
        logging.exception("rule %s failed", job.rule)
        raise
    finally:
        cpu = resource.getrusage(resource.RUSAGE_SELF)  # the whole process: imports included
        logging.info("rule %s took %.1f s (process CPU %.2f s%s)", job.rule, time.time() - start,
                     cpu.ru_utime + cpu.ru_stime, ", forked from the warm worker" if forked else "")
        _finish_backends(job.log)
        logging.shutdown()


def code_hash(*functions: str) -> str:
    """Short hash of the source of the functions (dotted names) that make one artifact. As a
    rule param it reruns that rule alone when its code changes (params are a rerun trigger;
    the 2-line script is the same for every paper rule)."""
    import importlib
    import inspect

    digest = hashlib.sha256()
    for name in functions:
        where, _, attr = name.rpartition(".")
        digest.update(inspect.getsource(getattr(importlib.import_module(where), attr)).encode())
    return digest.hexdigest()[:16]
