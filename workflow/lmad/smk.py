"""The one bridge between a Snakemake rule and a library function.

A rule names its stage function once, in its params (``**stage("lmad.stages.judge:judge")``:
the name and the hash of its code), and every rule runs the one script
workflow/scripts/stage.py as its command (lmad.stage_command). ``build_job`` builds its job
(lmad.job: the function with the rule's named inputs, outputs and params as keyword arguments,
plus a ``provenance`` dict for the Parquet metadata) and lmad.job.execute runs it, its logging
sent to the rule's ``log:`` file: in a child of the warm worker (lmad.worker) when a local run has
one that takes it, else in the script's own process.
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
from pathlib import Path
from typing import Any, Callable

from .job import Job
from .job_resources import SERVER_DEFAULTS_ENV, server_sizing


# Inputs that only order jobs (the stage reads them through its model spec).
DEPENDENCY_ONLY = {"weights"}
# The params ``stage`` sets: the stage function's name, which build_job's job runs, and its code hash,
# which only triggers reruns; no stage function receives them ("stage" is a param of rule generate's).
FUNCTION, CODE = "function", "code"
RERUN_ONLY = {FUNCTION, CODE}


def stage(name: str) -> dict[str, str]:
    """A rule's params: the stage function it runs (``function``, ``"module:function"``: the module is
    imported only where the job runs, in the warm worker's child or the script's process) and the
    hash of that stage's code (``code``, ``code_hash``): editing the stage's module, or any lmad
    module it imports, reruns the rule."""
    module, sep, function = name.partition(":")
    if not (sep and module and function):
        raise ValueError(f"stage {name!r}: expected 'module:function'")
    return {FUNCTION: name, CODE: code_hash(f"{module}.{function}")}


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


def served_placement(params: dict, defaults: dict) -> dict:
    """The model-spec params of a served model, with the profile's default resources (``defaults``,
    lmad.job_resources.profile_defaults) filled into its server's sizing where the model sets none.
    Not params: a scheduler setting must not make a finished job look outdated; and not the client
    job's resources: whichever client starts the server must not decide where it runs."""
    return {key: {**value, "server_resources": server_sizing(value["server_resources"], defaults)}
            for key, value in params.items()
            if isinstance(value, dict) and value.get("serve") and isinstance(value.get("server_resources"), dict)}


def server_defaults() -> dict:
    """The profile's default resources the Snakefile published for this run's servers."""
    import os

    return json.loads(os.environ.get(SERVER_DEFAULTS_ENV) or "{}")


def build_job(smk, function: str | Callable[..., None] | None = None) -> Job:
    """A rule's job: its stage function with its named inputs, outputs and params. The stage is
    the rule's ``function`` param (``stage()``), ``"module:function"``, so that a job the warm
    worker takes (lmad.worker) never imports the stage itself. ``function``: a stage given
    directly (tests), instead of the param."""
    inputs, outputs, params = _named(smk.input), _named(smk.output), _named(smk.params)
    function = params.get(FUNCTION) if function is None else function
    if function is None:
        raise ValueError(f"rule {smk.rule}: no stage to run (params: **stage(\"module:function\"))")
    inputs = {k: v for k, v in inputs.items() if k not in DEPENDENCY_ONLY}
    params = {k: v for k, v in params.items() if k not in RERUN_ONLY}
    clash = (set(inputs) & set(outputs)) | (set(inputs) & set(params)) | (set(outputs) & set(params))
    if clash:
        raise ValueError(f"rule {smk.rule}: names used twice among input/output/params: {sorted(clash)}")
    prompts = [v for k, v in inputs.items() if k.startswith("prompt") and isinstance(v, str)]
    kwargs = {**inputs, **outputs, **params,
              "provenance": provenance(smk.rule, dict(smk.wildcards.items()), params, prompts)}
    kwargs.update(served_placement(params, server_defaults()))
    return Job(smk.rule, smk.log[0] if smk.log else None, function, kwargs)


def code_hash(*functions: str) -> str:
    """Short hash of the code that makes one artifact: the modules of the functions (dotted
    names) and every lmad module those import, at any depth. As a rule param (``stage``) it reruns
    the rule when the library code it runs changes (params are a rerun trigger; the rules' one
    script never changes): a shared module (answer_types, stats) reruns every rule that uses it."""
    modules = {name.rpartition(".")[0] for name in functions}
    digest = hashlib.sha256()
    for module in sorted(modules.union(*(_imported(m) for m in modules))):
        digest.update(f"\0{module}\0".encode() + _module_source(module))
    _ImportCache.save()
    return digest.hexdigest()[:16]


_ROOT = Path(__file__).resolve().parent  # the lmad package


def _module_file(module: str) -> Path | None:
    """The source file of an lmad module (None for a name that is no module, e.g. a function)."""
    top, *parts = module.split(".")
    if top != "lmad":
        return None
    if not parts:
        return _ROOT / "__init__.py"
    rel = Path(*parts)
    return next((p for p in (_ROOT / rel.with_suffix(".py"), _ROOT / rel / "__init__.py") if p.is_file()), None)


@functools.lru_cache(maxsize=None)
def _module_source(module: str) -> bytes:
    path = _module_file(module)
    return path.read_bytes() if path else b""


@functools.lru_cache(maxsize=None)
def _imported(module: str) -> frozenset[str]:
    """Every lmad module ``module`` imports, at any depth (module- and function-level imports)."""
    seen: set[str] = set()
    todo = [module]
    while todo:
        for target in _direct_imports(todo.pop()):
            if target not in seen:
                seen.add(target)
                todo.append(target)
    return frozenset(seen)


@functools.lru_cache(maxsize=None)
def _direct_imports(module: str) -> tuple[str, ...]:
    """The lmad modules ``module``'s own source imports: each module is parsed once per process,
    however many stages import it (a run's Snakefile hashes every rule's stage), and once per
    version of its source across processes (``_ImportCache``)."""
    source = _module_source(module)
    if not source:
        return ()
    found: list[str] = []
    for t in _ImportCache.targets(module, source):
        if t not in found and _module_source(t):
            found.append(t)
    return tuple(found)


def _import_targets(module: str, source: bytes) -> list[str]:
    """Every lmad name an import statement of ``source`` reaches (modules or not: the caller keeps
    the modules)."""
    import ast

    package = module if _is_package(module) else module.rpartition(".")[0]
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        targets = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
            targets = [base] + [f"{base}.{a.name}" for a in node.names]
        found += [t for t in targets if t.split(".")[0] == "lmad"]
    return found


class _ImportCache:
    """Each module version's import targets, kept in the package's __pycache__ (git ignores it):
    parsing ~100 modules was a tenth of a no-op run, and every cluster job parses the Snakefile
    again. Keyed by the module's name and a hash of its source, so an edit is a miss; the entries
    this process used are what it writes back. Unreadable or unwritable: parsed as before."""

    path = _ROOT / "__pycache__" / "lmad-import-targets.json"
    _stored: dict[str, list[str]] | None = None
    _used: dict[str, list[str]] = {}
    _missed = False

    @classmethod
    def targets(cls, module: str, source: bytes) -> list[str]:
        if cls._stored is None:
            try:
                cls._stored = dict(json.loads(cls.path.read_text()))
            except (OSError, ValueError, TypeError):
                cls._stored = {}
        key = hashlib.sha256(module.encode() + b"\0" + source).hexdigest()[:32]
        hit = cls._stored.get(key)
        if not (isinstance(hit, list) and all(isinstance(t, str) for t in hit)):
            hit, cls._missed = _import_targets(module, source), True
        cls._used[key] = hit
        return hit

    @classmethod
    def save(cls) -> None:
        if not cls._missed:
            return
        cls._missed = False
        try:
            cls.path.parent.mkdir(exist_ok=True)
            tmp = cls.path.with_name(f"{cls.path.name}.{os.getpid()}.tmp")
            tmp.write_text(json.dumps(cls._used, sort_keys=True))
            os.replace(tmp, cls.path)  # atomic: processes parsing at once each write a whole file
        except OSError:
            pass


def _is_package(module: str) -> bool:
    path = _module_file(module)
    return bool(path and path.name == "__init__.py")
