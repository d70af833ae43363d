"""Every debate method through real Snakemake with the test double, 2 questions: the run
ends with predictions, judgments and the analysis table for all of them."""
import re

from conftest import make_config, snakemake, write_config
from lmad.protocols.debate import PROTOCOLS, DEBATE_STOP_REASONS
from lmad.schemas import read_table

DATASET = "hotpotqa"
DEBATE = list(PROTOCOLS)


def test_every_debate_method_runs_to_predictions(workdir):
    config = make_config(workdir, n=2, methods=["cot", "sc", *DEBATE],
                         debate={"rounds": 2, "methods": {"truemad": {"agents": 4}}})
    config["datasets"] = {DATASET: config["datasets"][DATASET]}
    write_config(workdir, config)
    snakemake(workdir)

    base = workdir / "results" / "scripted" / DATASET
    calls = {}
    for method in DEBATE:
        preds = read_table("predictions", base / "predictions" / f"{method}.parquet")
        assert len(preds) == 2 and set(preds["stop_reason"]) <= set(DEBATE_STOP_REASONS), method
        calls[method] = set(preds["calls"])
        last = 2 if PROTOCOLS[method].rounds is None else PROTOCOLS[method].rounds  # chair-none: round 0 only
        for t in range(last + 1):
            for suffix in ("", "_steps", "_state"):
                assert (base / method / f"round{t}{suffix}.parquet").exists(), (method, t, suffix)
    # 3 agents, R = 2 unless configured; the test double's judge always decides at once
    assert calls == {"mad": {9}, "promptmad": {9}, "truemad": {4 + 2 * (12 + 4)}, "computemad": {21},
                     "selfadvicemad": {21}, "dmad-manners": {12}, "truedmad": {24}, "dmad": {3},
                     "chair": {3 + 3 * 3 + 1},  # timing per_turn: 3 rounds (config chair), then the chair
                     "chair-none": {3 + 1},  # the drafts straight to the chair
                     "consensus": calls["consensus"]} and calls["consensus"] <= set(range(3, 10, 3))
    proposals = read_table("samples", base / "samples" / "proposals.parquet")
    for method in ("mad", "consensus", "computemad"):
        assert read_table("samples", base / method / "round0.parquet").equals(proposals)
        assert "0 model calls" in (workdir / "logs/scripted" / method / "round0.log").read_text()
    # 4 agents cannot reuse the 3-agent proposals: round 0 sends its own 4 x 2 solver calls
    assert "8 model calls" in (workdir / "logs/scripted" / "truemad" / "round0.log").read_text()
    judged = read_table("judgments", base / "judgments.parquet")
    assert set(judged["method"]) == {"cot", "sc", *DEBATE}
    table = (workdir / "results/scripted/analysis/table.md").read_text()
    assert all(m in table for m in DEBATE)

    # a debate prompt is an input only of the rounds that use it
    prompt = workdir / "prompts" / "debate_judge.txt"
    prompt.write_text(prompt.read_text() + "\nBe strict.\n")
    proc = snakemake(workdir, "--dry-run")
    # one block per planned job, "rule <name>:" up to the next header (a job without wildcards
    # has no wildcards line: a pattern spanning lines would take the next job's)
    blocks = re.split(r"^(?:local)?rule (\w+):\n", proc.stdout, flags=re.MULTILINE)[1:]
    rerun = set()
    for rule, body in zip(blocks[::2], blocks[1::2]):
        method = re.search(r"^\s+wildcards: .*debate_method=([\w-]+)", body, flags=re.MULTILINE)
        rerun.add((rule, method.group(1) if method else None))
    assert {m for rule, m in rerun if rule == "debate_round"} == {"dmad"}
    assert ("debate_predict", None) in rerun  # one predictions job for every debate method
