"""End to end with the real embedded model (SmolLM2-135M-Instruct on CPU), 2 questions."""
import polars as pl
import pytest

from conftest import SMOLLM2, make_config, snakemake, write_config

pytestmark = pytest.mark.model



def test_real_model_answers_two_questions(workdir):
    pytest.importorskip("xgrammar")
    config = make_config(workdir, n=2, models={"smollm2-135m": SMOLLM2}, backbones=["smollm2-135m"])
    config["datasets"] = {"hotpotqa": config["datasets"]["hotpotqa"]}
    write_config(workdir, config)
    snakemake(workdir, timeout=1500)

    samples = pl.read_parquet(workdir / "results/smollm2-135m/hotpotqa/samples/proposals.parquet")
    assert len(samples) == 6 and samples["response"].str.len_chars().min() > 0
    assert samples["completion_tokens"].min() > 0
    judged = pl.read_parquet(workdir / "results/smollm2-135m/hotpotqa/judgments.parquet")
    assert set(judged["method"]) == {"cot", "sc"} and len(judged) == 4
    # the constrained judge always answers with a verdict word
    assert set(judged["judge_verdict"]) <= {"correct", "incorrect"}
    table = (workdir / "results/smollm2-135m/analysis/table.md").read_text()
    assert table.count("hotpotqa") == 1
    # the model's jobs forked from the model worker, the others from the warm worker
    logs = {p.name: p.read_text() for p in (workdir / "logs/smollm2-135m/generate").glob("*.log")}
    assert logs and all("forked from the model worker" in text for text in logs.values()), logs
    assert "forked from the warm worker" in (workdir / "logs/smollm2-135m/analyze.log").read_text()
    # the judge's validation is stated above the numbers, and the headline follows it
    v = pl.read_parquet(workdir / "results/judge/smollm2-135m/validation.parquet").row(0, named=True)
    assert v["n_correct_items"] > 0 and v["n_incorrect_items"] > 0
    verdict = "PASSED" if v["passed"] else "FAILED"
    for out in ("results/smollm2-135m/analysis/table.md", "results/paper/table1.md"):
        top = (workdir / out).read_text().split("|")[0]
        assert f"Judge `smollm2-135m` validation {verdict}" in top, out
        assert ("Headline metric: **judge accuracy**" if v["passed"] else "Headline metric: **exact match") in top, out

    # same config twice -> same predictions (served from the cache, no model load)
    before = pl.read_parquet(workdir / "results/smollm2-135m/hotpotqa/predictions/sc.parquet")
    snakemake(workdir, "--forcerun", "generate", timeout=600)
    after = pl.read_parquet(workdir / "results/smollm2-135m/hotpotqa/predictions/sc.parquet")
    assert before.equals(after)
    log = (workdir / "logs/smollm2-135m/generate/proposals.log").read_text()
    assert "misses=0 model_loaded=False" in log
