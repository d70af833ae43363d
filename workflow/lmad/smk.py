"""The one bridge between a Snakemake rule and a library function.

A rule's script is two lines: import a stage function and hand it to ``run_rule``,
which sends the stage's logging to the rule's ``log:`` file and calls the function
with the rule's named inputs, outputs and params as keyword arguments, plus a
``provenance`` dict for the Parquet metadata.
"""
from __future__ import annotations

import hashlib
import json
import logging
import resource
import sys
import time
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


def run_rule(smk, fn: Callable[..., None]) -> None:
    if smk.log:
        stats_path(smk.log[0]).unlink(missing_ok=True)  # a rerun that calls no model leaves none
    logging.basicConfig(filename=smk.log[0], filemode="w", level=logging.INFO, force=True,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    inputs, outputs, params = _named(smk.input), _named(smk.output), _named(smk.params)
    inputs = {k: v for k, v in inputs.items() if k not in DEPENDENCY_ONLY}
    clash = (set(inputs) & set(outputs)) | (set(inputs) & set(params)) | (set(outputs) & set(params))
    if clash:
        raise ValueError(f"rule {smk.rule}: names used twice among input/output/params: {sorted(clash)}")
    prompts = [v for k, v in inputs.items() if k.startswith("prompt") and isinstance(v, str)]
    kwargs = {**inputs, **outputs, **params,
              "provenance": provenance(smk.rule, dict(smk.wildcards.items()), params, prompts)}
    start = time.time()
    try:
        _profiled(fn, smk.log[0] if smk.log else None)(**kwargs)
    except Exception:
        logging.exception("rule %s failed", smk.rule)
        raise
    finally:
        cpu = resource.getrusage(resource.RUSAGE_SELF)  # the whole process: imports included
        logging.info("rule %s took %.1f s (process CPU %.2f s)", smk.rule, time.time() - start,
                     cpu.ru_utime + cpu.ru_stime)
        _finish_backends(smk.log[0] if smk.log else None)
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
