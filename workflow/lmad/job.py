"""What a stage job runs and how: :class:`Job` (the rule's stage function and its keyword
arguments) and :func:`execute`, which runs it with its logging sent to the rule's log file and its
run statistics written beside it. The rules' one script builds the job (``lmad.smk.build_job``); it runs
in the script's own process or in a child of the warm worker (``lmad.worker``), the same way."""
from __future__ import annotations

import importlib
import json
import logging
import resource
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable


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


def _is_data_error(err: Exception) -> bool:
    data = sys.modules.get("lmad.data.convert")  # a job that never imported it read no dataset
    return data is not None and isinstance(err, data.DataError)


def execute(job: Job, forked: str | None = None) -> None:
    """A job's stage, logging to its log file, with its run statistics beside it; ``forked``:
    the worker it runs in a child of ("the warm worker", "the model worker": lmad.worker), whose
    CPU is the child's own, imports not included."""
    if job.log:
        stats_path(job.log).unlink(missing_ok=True)  # a rerun that calls no model leaves none
    logging.basicConfig(filename=job.log, filemode="w", level=logging.INFO, force=True,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    start = time.time()
    try:
        _profiled(stage_function(job.stage), job.log)(**job.kwargs)
    except Exception as err:
        if _is_data_error(err):
            # a dataset that breaks its schema: the message names file, line and field, which a
            # traceback would only bury; SystemExit ends the script (or the worker's child) quietly
            logging.error("rule %s failed: %s", job.rule, err)
            print(f"rule {job.rule}: {err}", file=sys.stderr, flush=True)
            raise SystemExit(1) from None
        logging.exception("rule %s failed", job.rule)
        raise
    finally:
        cpu = resource.getrusage(resource.RUSAGE_SELF)  # the whole process: imports included
        logging.info("rule %s took %.1f s (process CPU %.2f s%s)", job.rule, time.time() - start,
                     cpu.ru_utime + cpu.ru_stime, f", forked from {forked}" if forked else "")
        _finish_backends(job.log)
        logging.shutdown()
