"""Rule ``manifest``: what produced the current results — ``results/manifest.json``.

Records the hash of the run's config, the package version, the git commit of the
workflow checkout (when it is a git checkout) and, per model, how many stage jobs loaded
it and the tokens it computed. Every model job writes its run statistics beside its log
(``<log>.stats.json``: calls, cache hits, misses, loads, the prompt and generated tokens of its
misses; ``lmad.job``), from the backends' counters; logs from
before those files are read for their ``model_loaded=True|False`` line. The model is
built only on the first cache miss, so a load is one engine start for an embedded
backend (``vllm``, ``transformers``) and one client of the shared server for ``openai``
and served ``vllm`` (the server itself loaded the weights once). A job that reruns
overwrites both, so the counts are those of the latest run of every job behind the
current results. ``judge_validation`` counts for the judge model.

Which logs are read (``stage_logs``): those of the configured backbones — the
per-backbone jobs' (judge, generate, LMAD while an LMAD method is configured, each
configured debate method's rounds) and those
under each configured dataset's folder (its shards when ``shards`` > 1), skipping
method folders of methods no longer configured. ``judge.log`` counts
for the judge model, every other log for its backbone.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import subprocess
from pathlib import Path

from ..committees import models_of
from .. import __version__, layout
from ..atomic import write_text
from ..layout import shard_names
from ..job import stats_path

log = logging.getLogger(__name__)

_SERVER_START = re.compile(r"started a server for (\S+) \(")
_STATS = re.compile(r"model_loaded=(True|False)")


def config_sha256(config: dict) -> str:
    return hashlib.sha256(json.dumps(config, sort_keys=True, default=str).encode()).hexdigest()


def git_state(repo: str) -> dict:
    """Commit and dirtiness of the checkout, read-only (no index refresh); None outside git."""
    def git(*args: str) -> str | None:
        try:
            # safe.directory matches absolute paths only; the rule names the checkout from the run's directory
            safe = f"safe.directory={os.path.abspath(repo)}"
            proc = subprocess.run(["git", "-c", safe, "--no-optional-locks", "-C", repo, *args],
                                  capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return proc.stdout if proc.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    if commit is None:
        return {"git_commit": None, "git_dirty": None}
    status = git("status", "--porcelain", "--untracked-files=no")
    return {"git_commit": commit.strip(), "git_dirty": None if status is None else bool(status.strip())}


def stage_logs(logs_dir: Path, backbones: list[str], datasets: list[str], methods: list[str]) -> list[Path]:
    """Stage logs of the configured backbones: the per-backbone jobs' (``judge.log``,
    ``generate/``, and ``lmad/`` while an LMAD method is configured) and, under each
    configured dataset's folder, those of configured methods only."""
    found = []
    for backbone in backbones:
        root = logs_dir / backbone
        found += sorted(root.glob("*.log")) + sorted((root / "generate").rglob("*.log"))
        if any(m.startswith("lmad") for m in methods):
            found += sorted((root / "lmad").rglob("*.log"))
        for method in methods:  # debate baselines: one job per method and round
            if method != "lmad":
                found += sorted((root / method).rglob("*.log"))
        for dataset in datasets:
            for path in sorted((root / dataset).rglob("*.log")):
                parts = path.relative_to(root / dataset).parts
                if len(parts) > 1 and parts[0] not in methods:
                    continue
                found.append(path)
    return found


def _read_stats(path: Path) -> dict | None:
    try:
        stats = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return stats if isinstance(stats, dict) and isinstance(stats.get("loads"), int) else None


TOKENS = ("computed_prompt_tokens", "computed_completion_tokens")


def _empty_counts() -> dict[str, int | None]:
    return {"stage_logs": 0, "loads": 0, **dict.fromkeys(TOKENS, 0)}


def count_loads(logs: list[Path], logs_dir: Path, judge: str) -> dict[str, dict[str, int | None]]:
    """Per model: stage logs with a cache-stats line, how many of them loaded it, the tokens
    they computed (None when a job's statistics predate token counts: a sum without it would
    understate), and how many started its server (a served model: ``server_starts``,
    lmad.backends.serve's log line)."""
    counts: dict[str, dict[str, int | None]] = {}
    for path in logs:
        for name in _SERVER_START.findall(path.read_text(errors="replace")):
            entry = counts.setdefault(name, _empty_counts())
            entry["server_starts"] = entry.get("server_starts", 0) + 1
        top = path.relative_to(logs_dir).parts[0]
        model = judge if path.name == "judge.log" or top == "judge_validation" else top
        stats = _read_stats(stats_path(path))
        # the job's structured statistics; a log from before them has its model_loaded= line
        loads = [stats["loads"]] if stats is not None else \
            [int(flag == "True") for flag in _STATS.findall(path.read_text(errors="replace"))]
        for n in loads:
            entry = counts.setdefault(model, _empty_counts())
            entry["stage_logs"] += 1
            entry["loads"] += n
            for key in TOKENS:
                got = (stats or {}).get(key)
                entry[key] = entry[key] + got if isinstance(got, int) and entry[key] is not None else None
    return counts


def manifest(tables: list[str], manifest: str, config: dict, repo: str, provenance: dict,
             logs_dir: str = "logs") -> None:
    backbones, judge = list(config["backbones"]), config["judge"]["model"]
    logs_root = Path(logs_dir)
    work = [w for d in config["datasets"] for w in shard_names(d, config.get("shards", 1))]
    runs = layout.runs(backbones, config.get("seeds"))  # a replicate's logs are under logs/{backbone}/seed{s}/
    logs = stage_logs(logs_root, runs, work, list(config["methods"]))
    logs += sorted((logs_root / "judge_validation").glob(f"{judge}.log"))  # the judge's known-answer battery
    counts = count_loads(logs, logs_root, judge)
    models = {}
    for name in dict.fromkeys([*backbones, judge]):
        entry = counts.get(name, _empty_counts())
        if name in (config.get("committees") or {}):  # its jobs' logs load each member model they call
            models[name] = {"backend": "committee", "members": models_of(config, name), **entry,
                            "engine_starts": entry["loads"]}
            continue
        served = bool(config["models"][name].get("serve"))
        # a served model's stage jobs "load" an HTTP client; its engines are the servers started
        models[name] = {"backend": config["models"][name]["backend"], **entry,
                        "engine_starts": entry.get("server_starts", 0) if served else entry["loads"]}
    try:
        import snakemake

        snakemake_version = getattr(snakemake, "__version__", None)
    except ImportError:  # pragma: no cover - always there inside a rule
        snakemake_version = None
    record = {
        "config_sha256": config_sha256(config),
        "package_version": __version__,
        **git_state(repo),
        "snakemake_version": snakemake_version,
        "backbones": backbones,
        "seeds": config.get("seeds"),
        "judge": judge,
        "model_loads": {name: m["loads"] for name, m in models.items()},
        # engines started per model: its servers (served) or its stage jobs' loads (offline)
        "engine_starts": {name: m["engine_starts"] for name, m in models.items()},
        "models": models,
        "stage_logs_read": len(logs),
        "tables": sorted(tables),
    }
    out = Path(manifest)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_text(out, json.dumps(record, indent=1) + "\n")
    log.info("manifest: config %s, model loads %s (%d stage logs)", record["config_sha256"][:16],
             record["model_loads"], len(logs))
