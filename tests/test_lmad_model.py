"""LMAD with the real embedded model (SmolLM2-135M-Instruct on CPU): 2 questions, L = 2.
Whatever the tiny model writes, every policy finishes and records why each question stopped."""

import pytest

from conftest import SMOLLM2, make_config, snakemake, write_config
from lmad.protocols.localized_debate.commit_guard import CHECKS
from lmad.protocols.localized_debate.controller import LMAD_STOP_REASONS
from lmad.schemas import read_table

pytestmark = pytest.mark.model

LMAD = ["lmad", "lmad-concrete", "lmad-always"]


def test_lmad_with_the_real_model_finishes_and_records_stop_reasons(workdir):
    pytest.importorskip("xgrammar")
    config = make_config(workdir, n=2, models={"smollm2-135m": SMOLLM2}, backbones=["smollm2-135m"], methods=LMAD,
                         # short replies keep it to minutes on two CPU cores; truncated JSON is
                         # one more thing the parsers must survive
                         lmad={"iterations": 2, "local_rounds": 1,
                               "max_tokens": {"extractor": 96, "localizer": 48, "debater": 48, "resolver": 96}})
    config["datasets"] = {"hotpotqa": config["datasets"]["hotpotqa"]}
    write_config(workdir, config)
    snakemake(workdir, timeout=3000)

    base = workdir / "results" / "smollm2-135m" / "hotpotqa"
    for method in LMAD:
        preds = read_table("predictions", base / "predictions" / f"{method}.parquet")
        assert len(preds) == 2 and set(preds["stop_reason"]) <= set(LMAD_STOP_REASONS), method
        assert set(preds["stop_round"]) <= {0, 1} and (preds["calls"] >= 3).all()
        for row in read_table("lmad_trace", base / method / "trace.parquet").to_dicts():
            if row["agreed"]:
                continue
            # whatever the localizer wrote, the recorded witnesses index into the chains
            assert all(1 <= t <= len(c) for t, c in zip(row["witness"], row["chains"], strict=True))
            assert all(len(c) > 0 for c in row["chains"])
            # every check is recorded; a cut-off resolver reply decides nothing (admitted null)
            assert {c["check"] for c in row["checks"]} == set(CHECKS)
            assert (row["admitted"] is None) == (row["stop_reason"] == "resolver_truncated")
    judged = read_table("judgments", base / "judgments.parquet")
    assert set(judged["method"]) == set(LMAD)
