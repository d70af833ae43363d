"""The config schema as it validates: config/schema/config.schema.yaml with its registry-owned
lists filled in from the registries, so no list is kept in step with a registry by hand.

A node of the YAML that holds ``x-registry: <name>`` is completed here (JSON Schema ignores the
unknown keyword, so the bare YAML stays a valid, looser schema):

=====================  ==============================================  ==========================
``x-registry``         filled in                                       from
=====================  ==============================================  ==========================
``benchmarks``         ``enum`` of the benchmark names                 ``lmad.data.benchmarks``
``backends``           ``enum`` of the backend names                   ``lmad.backend_registry``
``backend-settings``   ``allOf``: each backend's keys, dtypes,         ``lmad.backend_registry``
                       required settings (``additionalProperties:
                       false`` per backend)
``call-roles``         ``enum`` of the call roles                      ``lmad.backends.base``
``methods``            ``pattern`` ``<base>[@tone][+society]``         ``lmad.registry``
``debate-methods``     ``enum`` of the debate protocols                ``lmad.protocols.debate``
``prompt-templates``   a ``properties`` key per template file not      ``config/prompts/*.txt``
                       listed, its default that file
=====================  ==============================================  ==========================

rules/common.smk and ``lmad.forecast`` validate with ``validate``; ``lmad.config_checks.schema_error``
and the tests read ``schema``.
"""
from __future__ import annotations

import atexit
import os
import tempfile
from pathlib import Path

from .backend_registry import BACKENDS, BackendEntry
from .backends.base import CALL_ROLES
from .data.benchmarks import BENCHMARKS
from .protocols.debate import PROTOCOLS
from .registry import METHODS
from .societies import SELECTORS
from .tones import TONES

#: the checkout's schema file
SCHEMA = Path(__file__).resolve().parents[2] / "config" / "schema" / "config.schema.yaml"
MARKER = "x-registry"


def backend_block(entry: BackendEntry) -> dict:
    """The ``allOf`` branch that says which settings ``entry``'s models take."""
    properties = {key: {} for key in ["backend", *sorted(entry.keys)]}
    if entry.dtypes:
        properties["dtype"] = {"enum": list(entry.dtypes)}
    then = {"additionalProperties": False, "properties": properties}
    if entry.required:
        then = {"required": list(entry.required), **then}
    return {"if": {"properties": {"backend": {"const": entry.name}}}, "then": then}


def method_pattern() -> str:
    """Every method name, by its parts: a base, then optionally a tone, then optionally a society
    (lmad.registry checks which combinations run)."""
    bases = [m for m in METHODS if "@" not in m and "+" not in m]
    societies = [s.replace("_", "-") for s in SELECTORS]
    return (f"^({'|'.join(bases)})(@({'|'.join(TONES[1:])}))?"
            f"(\\+({'|'.join(societies)}))?$")


def _fill(kind: str, node: dict, where: str, path: Path) -> dict:
    if kind == "benchmarks":
        return {"enum": list(BENCHMARKS)}
    if kind == "backends":
        return {"enum": list(BACKENDS)}
    if kind == "call-roles":
        return {"enum": list(CALL_ROLES)}
    if kind == "methods":
        return {"pattern": method_pattern()}
    if kind == "debate-methods":
        return {"enum": list(PROTOCOLS)}
    if kind == "prompt-templates":
        listed = node.get("properties", {})
        found = {p.stem: {"type": "string", "default": f"config/prompts/{p.name}"}
                 for p in sorted((path.parent.parent / "prompts").glob("*.txt")) if p.stem not in listed}
        return {"properties": {**listed, **found}}
    if kind == "backend-settings":
        typed = node.get("properties", {})
        untyped = sorted({k for e in BACKENDS.values() for k in e.keys} - typed.keys())
        if untyped:
            raise ValueError(f"{SCHEMA.name} {where}.properties: give {', '.join(untyped)} a type "
                             "(settings a registered backend takes)")
        return {"allOf": [backend_block(e) for e in BACKENDS.values()]}
    raise ValueError(f"{SCHEMA.name} {where}: unknown {MARKER} {kind!r}")


def _complete(node, path: Path, where: str = ""):
    if isinstance(node, list):
        return [_complete(v, path, f"{where}[{i}]") for i, v in enumerate(node)]
    if not isinstance(node, dict):
        return node
    out = {k: _complete(v, path, f"{where}.{k}" if where else k) for k, v in node.items() if k != MARKER}
    if MARKER in node:
        out.update(_fill(node[MARKER], out, where, path))
    return out


def schema(path: str | os.PathLike = SCHEMA) -> dict:
    """The schema at ``path`` with every ``x-registry`` node filled in from its registry."""
    import yaml

    path = Path(path)
    # libyaml's loader where PyYAML has it: the pure-Python one was a fifth of parsing the Snakefile
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return _complete(yaml.load(path.read_text(encoding="utf-8"), Loader=loader), path)


def validate(config: dict, path: str | os.PathLike = SCHEMA) -> None:
    """Validate ``config`` against ``schema(path)`` and fill in the schema's defaults, in place:
    what Snakemake's ``snakemake.utils.validate`` does with ``schema_file(path)`` (Draft 2020-12,
    a property's default set before its subschema is checked), on the schema already in memory.
    Snakemake's reads the schema file back with the pure-Python YAML loader, 0.1-0.2 s of every
    ``snakemake`` start (tests/test_config_schema.py pins the two to the same config).
    Raises ``jsonschema.ValidationError``."""
    import copy

    import jsonschema

    completed = schema(path)
    base = jsonschema.validators.validator_for(completed, default=jsonschema.Draft202012Validator)
    check_properties = base.VALIDATORS["properties"]

    def properties_with_defaults(validator, properties, instance, node):
        if isinstance(instance, dict):  # as jsonschema's own properties check, which skips others
            for name, sub in properties.items():
                if isinstance(sub, dict) and "default" in sub:
                    instance.setdefault(name, copy.deepcopy(sub["default"]))
        yield from check_properties(validator, properties, instance, node)

    jsonschema.validators.extend(base, {"properties": properties_with_defaults})(completed).validate(config)


def schema_file(path: str | os.PathLike = SCHEMA) -> str:
    """A file holding ``schema(path)``, for Snakemake's ``validate`` (which takes a path: the tests
    check ``validate`` against it); removed when the process ends."""
    import yaml

    # YAML, as the schema file itself: Snakemake loads a JSON schema's defaults as OrderedDicts,
    # which then fill the config and which yaml.safe_dump refuses
    fd, name = tempfile.mkstemp(prefix="lmad-config-schema-", suffix=".yaml")
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        yaml.dump(schema(path), fh, Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper), sort_keys=False)
    atexit.register(lambda: Path(name).unlink(missing_ok=True))
    return name
