"""Per-backend model settings (config/schema/config.schema.yaml): a typo or a wrong type fails
before any job runs and names the key; every setting in use today stays valid."""
import copy
from pathlib import Path

import jsonschema
import pytest
import yaml
from snakemake.exceptions import WorkflowError
from snakemake.utils import update_config, validate

from conftest import REPO, SMOLLM2, make_config, scripted_model, snakemake, write_config
from lmad import config_schema
from lmad.config_schema import schema_file

SCHEMA = schema_file()  # the schema file with the registries' lists filled in, as a run validates
OPENAI = {"backend": "openai", "model": "qwen2.5-7b", "base_url": "http://node:8001/v1", "revision": "abc",
          "max_concurrency": 64, "api_key_env": "MY_KEY", "timeout_s": 30, "max_retries": 3, "backoff_s": 0.5,
          "chat_template_kwargs": {"enable_thinking": False}, "resources": {"mem_mb": 2000}}
VLLM = {"backend": "vllm", "model": "Qwen/Qwen2.5-7B-Instruct", "dtype": "bfloat16", "tensor_parallel_size": 2,
        "max_model_len": 8192, "gpu_memory_utilization": 0.9, "enforce_eager": True, "revision": "r",
        "engine_kwargs": {"quantization": "awq"}, "resources": {"gpu": 0, "runtime": 60},
        "sampling": {"top_p": 0.8, "top_k": 20}, "role_sampling": {"judge": {"top_p": 1.0}, "debater": {"min_p": 0.05}}}
SCRIPTED = {**scripted_model(), "responder": "oracle:respond", "judge_mode": "always_correct"}


def config_with(tmp_path, model):
    config = make_config(tmp_path, n=1, models={"m": model}, backbones=["m"])
    return copy.deepcopy(config)


@pytest.mark.parametrize("path", sorted((REPO / "config").glob("*.yaml")), ids=lambda p: p.name)
def test_shipped_configs_validate(path):
    config = yaml.safe_load(path.read_text())
    if "datasets" not in config:  # an overlay on the demo config (debate-demo, truemad, vllm-cpu)
        overlay, config = config, yaml.safe_load((REPO / "config" / "config.yaml").read_text())
        update_config(config, overlay)  # how snakemake merges a second --configfile (in place)
    assert config["models"]
    ours, snakemakes = copy.deepcopy(config), copy.deepcopy(config)
    config_schema.validate(ours)  # what a run does (rules/common.smk)
    validate(snakemakes, schema=SCHEMA)  # what Snakemake's validate does with the same schema
    assert ours == snakemakes and ours != config  # the same defaults filled in


@pytest.mark.parametrize("model", [OPENAI, VLLM, SCRIPTED, SMOLLM2, {**SMOLLM2, "dtype": "float32", "cache_chunk": 8}],
                         ids=["openai", "vllm", "scripted", "transformers-gguf", "transformers-options"])
def test_every_setting_in_use_is_valid(tmp_path, model):
    validate(config_with(tmp_path, model), schema=SCHEMA)


BAD = [
    ("openai typo", {**OPENAI, "max_concurency": 4}, "max_concurency"),
    ("timeout a word", {**OPENAI, "timeout_s": "abc"}, "timeout_s"),
    ("timeout zero", {**OPENAI, "timeout_s": 0}, "timeout_s"),
    ("retries negative", {**OPENAI, "max_retries": -1}, "max_retries"),
    ("openai without url", {k: v for k, v in OPENAI.items() if k != "base_url"}, "base_url"),
    ("vllm setting on openai", {**OPENAI, "tensor_parallel_size": 2}, "tensor_parallel_size"),
    ("vllm typo", {**VLLM, "tensor_paralel_size": 2}, "tensor_paralel_size"),
    ("memory share > 1", {**VLLM, "gpu_memory_utilization": 1.5}, "gpu_memory_utilization"),
    ("transformers typo", {**SMOLLM2, "batchsize": 4}, "batchsize"),
    ("gguf typo", {**SMOLLM2, "gguf": {**SMOLLM2["gguf"], "fille": "x"}}, "fille"),
    ("judge mode unknown", {**SCRIPTED, "judge_mode": "lenient"}, "judge_mode"),
    ("responder not module:function", {**SCRIPTED, "responder": "oracle.respond"}, "responder"),
    ("resources typo", {**VLLM, "resources": {"gpus": 1}}, "gpus"),
    ("unknown call role", {**VLLM, "role_sampling": {"chair": {"top_p": 0.5}}}, "chair"),
    ("role sampling typo", {**VLLM, "role_sampling": {"judge": {"topp": 0.5}}}, "topp"),
    ("role sampling on transformers", {**SMOLLM2, "role_sampling": {"judge": {"top_p": 0.5}}}, "role_sampling"),
    ("dtype no backend takes", {**SMOLLM2, "dtype": "float8"}, "dtype"),
    ("vllm dtype unknown", {**VLLM, "dtype": "float8"}, "dtype"),
    ("vllm takes no float64", {**VLLM, "dtype": "float64"}, "dtype"),
]


@pytest.mark.parametrize("name,model,key", BAD, ids=[b[0] for b in BAD])
def test_a_bad_setting_fails_naming_the_key(tmp_path, name, model, key):
    with pytest.raises(WorkflowError) as err:
        validate(config_with(tmp_path, model), schema=SCHEMA)
    assert key in str(err.value)
    with pytest.raises(jsonschema.ValidationError) as err:
        config_schema.validate(config_with(tmp_path, model))
    assert key in str(err.value)


def test_a_typo_fails_the_dry_run_before_any_job(tmp_path):
    config = make_config(tmp_path, n=1)
    config["models"]["scripted"]["max_concurency"] = 4
    write_config(tmp_path, config)
    proc = snakemake(tmp_path, "--dry-run", check=False)
    assert proc.returncode != 0 and "max_concurency" in proc.stdout + proc.stderr
    assert not (Path(tmp_path) / "results").exists()


def backend_dtypes(backend: str) -> list[str]:
    schema = config_schema.schema()
    branch = next(b["then"] for b in schema["properties"]["models"]["additionalProperties"]["allOf"]
                  if b["if"]["properties"]["backend"]["const"] == backend)
    return branch["properties"]["dtype"]["enum"]


def test_every_transformers_dtype_is_one_the_backend_loads():
    """The transformers backend loads with getattr(torch, dtype): each allowed name (``auto`` as this
    machine resolves it) is a floating dtype."""
    import torch

    from lmad.backend_registry import BACKENDS
    from lmad.backends.cpu_dtype import resolve_dtype

    for name in backend_dtypes("transformers"):
        assert getattr(torch, resolve_dtype(name)).is_floating_point, name
    for backend, default in ((n, e.default_dtype) for n, e in BACKENDS.items() if e.default_dtype):
        assert default in backend_dtypes(backend), backend


def test_a_dtype_no_backend_takes_fails_the_dry_run(tmp_path):
    """Before any job (the model conversion included), naming the key."""
    config = make_config(tmp_path, n=1, models={"m": {**SMOLLM2, "dtype": "float8"}}, backbones=["m"])
    write_config(tmp_path, config)
    proc = snakemake(tmp_path, "--dry-run", check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "config models.m.dtype: 'float8' is not one of" in out, out[-3000:]
    assert "convert_model" not in out


def test_the_registry_lists_are_filled_in_at_load(monkeypatch):
    """Each `x-registry` node of the YAML is completed from its registry (lmad.config_schema): a
    benchmark registered in-process is a dataset type at once, and the bare YAML keeps no list."""
    from lmad.backends.base import CALL_ROLES
    from lmad.data.benchmarks import BENCHMARKS, Benchmark
    from lmad.protocols.debate import PROTOCOLS

    raw = Path(config_schema.SCHEMA).read_text()
    assert "x-registry: benchmarks" in raw and "hotpotqa, 2wikimultihopqa" not in raw
    monkeypatch.setitem(BENCHMARKS, "toyqa", Benchmark("toyqa", lambda raw, where, seed: {}, "span", "ToyQA"))
    props = config_schema.schema()["properties"]
    assert props["datasets"]["additionalProperties"]["properties"]["type"]["enum"] == [*BENCHMARKS]
    assert "toyqa" in BENCHMARKS
    models = props["models"]["additionalProperties"]["properties"]
    assert models["role_sampling"]["propertyNames"] == {"enum": list(CALL_ROLES)}
    assert props["debate"]["properties"]["methods"]["propertyNames"] == {"enum": list(PROTOCOLS)}
    prompts = props["prompts"]["properties"]
    assert prompts["debater"] == {"type": "string", "default": "config/prompts/debater.txt"}
    assert not any(config_schema.MARKER in str(node) for node in props.values())


def test_a_backend_setting_without_a_type_and_an_unknown_marker_fail_naming_the_place(monkeypatch, tmp_path):
    from lmad.backend_registry import BACKENDS, BackendEntry

    monkeypatch.setitem(BACKENDS, "odd", BackendEntry("odd", "x:Y", frozenset({"model", "colour"}), chunk=1))
    with pytest.raises(ValueError, match=r"models.additionalProperties.properties: give colour a type"):
        config_schema.schema()
    monkeypatch.delitem(BACKENDS, "odd")
    bad = tmp_path / "schema" / "s.yaml"
    bad.parent.mkdir()
    bad.write_text("properties: {x: {x-registry: planets}}\n")
    with pytest.raises(ValueError, match="properties.x: unknown x-registry 'planets'"):
        config_schema.schema(bad)
