"""Every debate method with the real embedded model (SmolLM2-135M-Instruct on CPU), 2
questions, one revision round: the protocols run end to end on real, messy output."""
import polars as pl
import pytest

from conftest import SMOLLM2, make_config, snakemake, write_config
from lmad.protocols.debate import PROTOCOLS, DEBATE_STOP_REASONS
from lmad.schemas import read_table

# All nine debate methods on the real model: 712 s on 2 quiet cores with batched decoding, so
# it runs in CI (it was opt-in while decoding went one request at a time).
pytestmark = pytest.mark.model

DATASET = "hotpotqa"


def test_real_model_runs_every_debate_method(workdir):
    pytest.importorskip("xgrammar")
    config = make_config(workdir, n=2, models={"smollm2-135m": SMOLLM2}, backbones=["smollm2-135m"],
                         methods=["sc", *PROTOCOLS],
                         debate={"rounds": 1, "max_tokens": {"advice": 48, "judge": 48, "moderator": 32}})
    config["datasets"] = {DATASET: config["datasets"][DATASET]}
    write_config(workdir, config)
    snakemake(workdir, timeout=3600)

    base = workdir / "results" / "smollm2-135m" / DATASET
    for method in PROTOCOLS:
        preds = read_table("predictions", base / "predictions" / f"{method}.parquet")
        assert len(preds) == 2 and set(preds["stop_reason"]) <= set(DEBATE_STOP_REASONS), method
        assert (preds["calls"] >= 3).all() and (preds["completion_tokens"] > 0).all(), method
        rounds = 1 if PROTOCOLS[method].rounds is None else PROTOCOLS[method].rounds  # chair-none: round 0 only
        for t in range(rounds + 1):
            samples = read_table("samples", base / method / f"round{t}.parquet")
            assert samples.filter(pl.col("response").str.len_chars() == 0).is_empty(), (method, t)
    # constrained judge / moderator replies are valid JSON unless cut by max_tokens
    steps = read_table("debate_steps", base / "dmad" / "round0_steps.parquet")
    judged = steps.filter(pl.col("step") == "judge")
    assert len(judged) == 2
    complete = judged.filter(pl.col("finish_reason") == "stop")
    assert not complete["parse_error"].str.starts_with("invalid JSON").any()
    assert set(read_table("judgments", base / "judgments.parquet")["method"]) == {"sc", *PROTOCOLS}
