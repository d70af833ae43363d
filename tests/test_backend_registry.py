"""One registry of backends (lmad.backend_registry), every list of backends derived from it: the
config schema's backend enum, dtype enums and per-backend allowed keys agree with it (a
disagreement names the YAML to write), and a backend registered in-process is seen by
make_backend, the call cache's chunk size, the warm worker, the layer-D probe check and the
scheduler sizing with no other edit."""
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import REPO

from lmad import backend_registry as registry
from lmad.backend_registry import BACKENDS, BackendEntry
from lmad.backends.base import Backend, Completion

SCHEMA = REPO / "config" / "schema" / "config.schema.yaml"
WHERE = "config/schema/config.schema.yaml models.additionalProperties"


def models_schema(schema: dict) -> dict:
    return schema["properties"]["models"]["additionalProperties"]


def expected_block(entry: BackendEntry) -> dict:
    """The ``allOf`` branch of the schema that says which settings ``entry``'s models take."""
    properties = {key: {} for key in ["backend", *sorted(entry.keys)]}
    if entry.dtypes:
        properties["dtype"] = {"enum": list(entry.dtypes)}
    then = {"additionalProperties": False, "properties": properties}
    if entry.required:
        then = {"required": list(entry.required), **then}
    return {"if": {"properties": {"backend": {"const": entry.name}}}, "then": then}


def block_yaml(entry: BackendEntry) -> str:
    """``expected_block`` as the schema writes its branches (indented for ``allOf``)."""
    props = [f"{key}: {{}}" for key in ["backend", *sorted(entry.keys - {"dtype"})]]
    if entry.dtypes:
        props.append(f"dtype: {{enum: [{', '.join(entry.dtypes)}]}}")
    lines, line = [], "            properties: {"
    for i, prop in enumerate(props):
        piece = prop + ("}" if i == len(props) - 1 else ", ")
        if len(line) + len(piece) > 110:
            lines.append(line.rstrip())
            line = " " * 25
        line += piece
    lines.append(line)
    head = [f"        - if: {{properties: {{backend: {{const: {entry.name}}}}}}}", "          then:"]
    if entry.required:
        head.append(f"            required: [{', '.join(entry.required)}]")
    return "\n".join([*head, "            additionalProperties: false", *lines])


def schema_disagreements(schema: dict, backends: dict[str, BackendEntry]) -> list[str]:
    """Where the schema's models section and the registry disagree, each as what to change."""
    models = models_schema(schema)
    out = []
    enum = models["properties"]["backend"]["enum"]
    if enum != list(backends):
        out.append(f"{WHERE}.properties.backend: write `{{enum: [{', '.join(backends)}]}}` (was {enum})")
    branches = {b["if"]["properties"]["backend"]["const"]: b for b in models["allOf"]}
    for name in branches.keys() - backends.keys():
        out.append(f"{WHERE}.allOf: remove the branch of {name!r}, which no backend registers")
    typed = models["properties"]
    for name, entry in backends.items():
        untyped = sorted(entry.keys - typed.keys())
        if untyped:
            out.append(f"{WHERE}.properties: give {', '.join(untyped)} (settings of {name}) a type")
        if name not in branches:
            out.append(f"{WHERE}.allOf: add the settings {name} takes:\n{block_yaml(entry)}")
            continue
        have, want = branches[name]["then"], expected_block(entry)["then"]
        for part in ("required", "additionalProperties"):
            if have.get(part) != want.get(part):
                out.append(f"{WHERE}.allOf ({name}): `{part}` is {have.get(part)}, the registry says {want.get(part)}")
        extra, missing = sorted(have["properties"].keys() - want["properties"].keys()), sorted(
            want["properties"].keys() - have["properties"].keys())
        if extra or missing:
            out.append(f"{WHERE}.allOf ({name}): properties to add {missing}, to remove {extra} "
                       f"(registry keys of {name}: lmad/backend_registry.py)")
        dtypes = (have["properties"].get("dtype") or {}).get("enum")
        if entry.dtypes and dtypes != list(entry.dtypes):
            out.append(f"{WHERE}.allOf ({name}): dtype should be `{{enum: [{', '.join(entry.dtypes)}]}}`, is {dtypes}")
    used = set().union(*(e.keys for e in backends.values())) | {"backend"}
    orphans = sorted(typed.keys() - used)
    if orphans:
        out.append(f"{WHERE}.properties: {orphans} are settings no registered backend takes")
    return out


def test_the_schema_agrees_with_the_registry():
    problems = schema_disagreements(yaml.safe_load(SCHEMA.read_text()), BACKENDS)
    assert not problems, "the config schema and lmad/backend_registry.py disagree:\n" + "\n".join(problems)


def test_the_derived_lists():
    """What the registry derives: the backend lists each module reads from it."""
    assert list(BACKENDS) == ["transformers", "vllm", "openai", "scripted"]
    assert registry.names(in_process=True) == ("transformers", "vllm")  # lmad.worker
    assert registry.names(logprobs=True) == ("transformers", "vllm", "scripted")  # layer D's probe
    assert registry.names(gpu=True) == ("vllm",)  # lmad.job_resources
    assert registry.names(perturbable=True) == ("transformers", "scripted")  # societies' perturbed agents
    assert {n: e.chunk for n, e in BACKENDS.items()} == {"transformers": 4096, "vllm": 4096, "openai": 512,
                                                         "scripted": 16}
    assert {n: e.default_dtype for n, e in BACKENDS.items() if e.default_dtype} == {"transformers": "float32",
                                                                                      "vllm": "auto"}
    assert registry.names(test_only=True) == ("scripted",)
    assert registry.runs_as({"backend": "vllm", "serve": True}).name == "openai"
    assert registry.runs_as({"backend": "vllm", "serve": False}).name == "vllm"


def test_every_served_by_is_registered_and_every_target_loads():
    for entry in BACKENDS.values():
        assert entry.served_by is None or entry.served_by in BACKENDS, entry.name
        assert issubclass(entry.load(), Backend), entry.target  # vllm_backend imports vllm only when built
        if entry.identity:
            assert callable(entry.load_identity())


def test_importing_the_registry_imports_no_backend():
    code = ("import sys, lmad.backend_registry; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'vllm', 'transformers', 'polars')"
            " or m.startswith('lmad.') and m != 'lmad.backend_registry'))")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO / "workflow", capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_an_inconsistent_entry_fails_at_registration():
    with pytest.raises(ValueError, match="perturbable"):
        BackendEntry("x", "m:C", frozenset({"model"}), chunk=1, perturbable=True)
    with pytest.raises(ValueError, match="dtypes"):
        BackendEntry("x", "m:C", frozenset({"model", "dtype"}), chunk=1)
    with pytest.raises(ValueError, match="already registered"):
        registry.register(BACKENDS["scripted"])
    with pytest.raises(ValueError, match="unknown backend 'llamacpp' .expected transformers, vllm, openai or scripted"):
        registry.backend("llamacpp")


# ---- a backend added by one registration -----------------------------------------------------

class FakeBackend(Backend):
    """A backend no module of the package knows."""

    def __init__(self, name: str, model: str, dtype: str = "auto", **kwargs):
        self.model_id, self.dtype, self.kwargs = f"{name}@fake", dtype, kwargs

    def generate(self, requests):
        return [Completion(text="fake", prompt_tokens=1, completion_tokens=1) for _ in requests]

    def next_token_logprobs(self, requests, options):
        return [[0.0] * len(options) for _ in requests]


FAKE = BackendEntry("fake", f"{__name__}:FakeBackend", frozenset({"model", "dtype", "tensor_parallel_size", "threads",
                                                                    "cache_chunk", "resources"}),
                    chunk=7, in_process=True, logprobs=True, gpu=True, dtypes=("auto", "float16"),
                    default_dtype="float16")
PLAIN = BackendEntry("plain", f"{__name__}:FakeBackend", frozenset({"model"}), chunk=3)


@pytest.fixture
def fake(monkeypatch):
    monkeypatch.setitem(BACKENDS, "fake", FAKE)
    monkeypatch.setitem(BACKENDS, "plain", PLAIN)
    return {"backend": "fake", "name": "f", "model": "some/hub-id", "threads": 2, "tensor_parallel_size": 2}


def test_a_registered_backend_is_built_and_cached(fake, tmp_path):
    from lmad import backends

    built = backends.make_backend({**fake, "cache_chunk": 5, "resources": {"gpu": 2}})
    assert isinstance(built, FakeBackend) and built.kwargs == {"threads": 2, "tensor_parallel_size": 2}
    opened = backends.open_backend(fake, tmp_path)
    try:
        assert opened.chunk_size == FAKE.chunk
        assert backends.backend_identity(fake) == "f@some/hub-id|fake,dtype=float16"
    finally:
        backends.OPENED.remove(opened)


def test_a_registered_backend_is_seen_by_the_worker_the_probe_and_the_scheduler(fake):
    from lmad.studies.disagreement.probe import probe_backends, unprobeable
    from lmad.job_resources import model_sizing
    from lmad.worker import loads_a_model

    plain = {"backend": "plain", "name": "p", "model": "x"}
    assert loads_a_model({"spec": fake}) and not loads_a_model({"spec": plain})
    assert "fake" in probe_backends() and unprobeable("f", fake) is None
    assert "plain" in unprobeable("p", plain) and "needs transformers, vllm, scripted, fake" in unprobeable("p", plain)
    assert model_sizing({"f": fake}, "f")["gpu"] == 2
    assert model_sizing({"p": plain}, "p") == {"gpu": 0}
    with pytest.raises(ValueError, match="only vllm or fake models run on GPUs"):
        model_sizing({"p": {**plain, "resources": {"gpu": 1}}}, "p")


def test_the_schema_check_names_what_a_new_backend_needs(fake):
    problems = schema_disagreements(yaml.safe_load(SCHEMA.read_text()), BACKENDS)
    text = "\n".join(problems)
    assert "write `{enum: [transformers, vllm, openai, scripted, fake, plain]}`" in text
    assert "add the settings fake takes:" in text and "const: fake" in text and "dtype: {enum: [auto, float16]}" in text
    # the block it prints, pasted into the schema, is what the check wants
    schema = yaml.safe_load(SCHEMA.read_text())
    models = models_schema(schema)
    models["properties"]["backend"]["enum"] = list(BACKENDS)
    models["allOf"] += [yaml.safe_load(block_yaml(e))[0] for e in (FAKE, PLAIN)]
    assert schema_disagreements(schema, BACKENDS) == []


def test_the_docs_list_every_capability():
    """docs/backends.md "Adding a backend" explains each field of a registration."""
    text = (Path(REPO) / "docs" / "backends.md").read_text()
    section = text[text.index("### Adding a backend"):]
    fields = [f for f in BackendEntry.__dataclass_fields__ if f not in ("name", "about")]
    missing = [f for f in fields if f"`{f}`" not in section]
    assert not missing, f"docs/backends.md \"Adding a backend\" does not explain {missing}"
