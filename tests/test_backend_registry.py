"""One registry of backends (lmad.backend_registry), every list of backends derived from it: the
config schema's backend enum, dtype enums and per-backend allowed keys agree with it (a
disagreement names the YAML to write), and a backend registered in-process is seen by
make_backend, the call cache's chunk size, the warm worker, the layer-D probe check and the
scheduler sizing with no other edit."""
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO

from lmad import backend_registry as registry
from lmad import config_schema
from lmad.backend_registry import BACKENDS, BackendEntry
from lmad.backends.base import Backend, Completion

def models_schema() -> dict:
    """The config schema's ``models`` entries as a run validates them (lmad.config_schema)."""
    return config_schema.schema()["properties"]["models"]["additionalProperties"]


def test_the_schema_is_the_registry():
    """The backend enum and each backend's allowed settings are generated from the registry; every
    setting the schema types is one some backend takes."""
    models = models_schema()
    assert models["properties"]["backend"]["enum"] == list(BACKENDS)
    assert models["allOf"] == [config_schema.backend_block(e) for e in BACKENDS.values()]
    transformers = models["allOf"][0]["then"]
    assert transformers["properties"]["dtype"] == {"enum": ["auto", "float32", "float", "float16", "half", "bfloat16",
                                                            "float64", "double"]}
    assert models["allOf"][2]["then"]["required"] == ["model", "base_url"]  # openai
    used = set().union(*(e.keys for e in BACKENDS.values())) | {"backend"}
    assert not sorted(models["properties"].keys() - used), "settings no registered backend takes"


def test_the_derived_lists():
    """What the registry derives: the backend lists each module reads from it."""
    assert list(BACKENDS) == ["transformers", "vllm", "openai", "scripted"]
    assert registry.names(in_process=True) == ("transformers", "vllm")  # lmad.worker
    # the model worker's: the embedded engine forks warm, vLLM starts its own processes
    assert [n for n, e in BACKENDS.items() if e.warm_imports] == ["transformers"]
    jobs = [["out.parquet", {"backend": "transformers"}], [{"jurors": [{"backend": "vllm"}, {"backend": "openai"}]}]]
    assert registry.warm_backends(jobs) == ["transformers"]
    assert registry.warm_backends([[{"backend": "vllm"}], [{"backend": "scripted"}], []]) == []
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
    with pytest.raises(ValueError, match="warm_imports are for a backend that loads in process"):
        BackendEntry("x", "m:C", frozenset({"model"}), chunk=1, warm_imports=("torch",))
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
    from lmad.backend_registry import in_process_backends

    plain = {"backend": "plain", "name": "p", "model": "x"}
    assert in_process_backends({"spec": fake}) == {"fake"} and not in_process_backends({"spec": plain})
    assert in_process_backends({"spec": fake, "jurors": [plain, {"backend": "transformers"}]}) == {"fake", "transformers"}
    assert "fake" in probe_backends() and unprobeable("f", fake) is None
    assert "plain" in unprobeable("p", plain) and "needs transformers, vllm, scripted, fake" in unprobeable("p", plain)
    assert model_sizing({"f": fake}, "f")["gpu"] == 2
    assert model_sizing({"p": plain}, "p") == {"gpu": 0}
    with pytest.raises(ValueError, match="only vllm or fake models run on GPUs"):
        model_sizing({"p": {**plain, "resources": {"gpu": 1}}}, "p")


def test_a_registered_backend_is_in_the_schema(fake):
    """A new backend needs no schema edit: its name and its settings' branch are generated."""
    models = models_schema()
    assert models["properties"]["backend"]["enum"] == [*BACKENDS] and "fake" in BACKENDS
    fake_branch = next(b["then"] for b in models["allOf"] if b["if"]["properties"]["backend"]["const"] == "fake")
    assert fake_branch["properties"]["dtype"] == {"enum": ["auto", "float16"]}


def test_the_docs_list_every_capability():
    """docs/backends.md "Adding a backend" explains each field of a registration."""
    text = (Path(REPO) / "docs" / "backends.md").read_text()
    section = text[text.index("### Adding a backend"):]
    fields = [f for f in BackendEntry.__dataclass_fields__ if f not in ("name", "about")]
    missing = [f for f in fields if f"`{f}`" not in section]
    assert not missing, f"docs/backends.md \"Adding a backend\" does not explain {missing}"
