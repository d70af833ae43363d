"""LMAD through real Snakemake with the test double: the three policies run to the end,
iteration 0 reuses the proposals, and a localizer prompt edit reruns only what it must."""

import time

from conftest import make_config, snakemake, write_config
from lmad.protocols.localized_debate.controller import LMAD_STOP_REASONS
from lmad.schemas import read_table, read_units

LMAD = ["lmad", "lmad-concrete", "lmad-always"]
DATASET = "hotpotqa"


def test_lmad_policies_run_and_a_localizer_edit_reruns_only_downstream(workdir):
    config = make_config(workdir, n=4, methods=["cot", "sc", *LMAD],
                         lmad={"iterations": 2, "local_rounds": 1})
    config["datasets"] = {DATASET: config["datasets"][DATASET]}
    write_config(workdir, config)
    snakemake(workdir)

    base = workdir / "results" / "scripted" / DATASET
    proposals = read_table("samples", base / "samples" / "proposals.parquet")
    for method in LMAD:
        preds = read_table("predictions", base / "predictions" / f"{method}.parquet")
        assert len(preds) == 4 and set(preds["stop_reason"]) <= set(LMAD_STOP_REASONS), method
        assert (preds["calls"] >= 3).all()
        trace = read_table("lmad_trace", base / method / "trace.parquet")
        per_question = {}
        for row in trace.to_dicts():
            per_question[row["qid"]] = per_question.get(row["qid"], 0) + row["calls"]
        assert per_question == dict(zip(preds["qid"], preds["calls"]))
        # iteration 0 is the shared proposals, reused without a model call
        assert read_table("samples", base / method / "iter0" / "generate.parquet").equals(proposals)
    # one job per stage and iteration serves all three policies (and every dataset)
    log = (workdir / "logs" / "scripted" / "lmad" / "iter0" / "generate.log").read_text()
    assert "0 model calls" in log
    # the test double makes the agents disagree on some questions, so the stages did work; an
    # iteration's stage table other than the generations is one file of every (dataset, method) unit
    iterations = workdir / "results" / "scripted" / "lmad"
    localized = read_units("lmad_localizations", iterations / "iter0" / "localize.parquet", [(DATASET, m) for m in LMAD])
    assert all(localized)
    assert sorted(p.name for p in (iterations / "iter0").iterdir()) == [
        f"{s}.parquet" for s in sorted(("extract", "localize", "debate", "resolve", "relation", "commit", "state"))]
    judged = read_table("judgments", base / "judgments.parquet")
    assert set(judged["method"]) == {"cot", "sc", *LMAD}

    outputs = [base / "samples" / "proposals.parquet", base / "predictions" / "cot.parquet"]
    outputs += [iterations / "iter0" / f"{s}.parquet" for s in ("extract", "localize")]
    outputs += [iterations / "iter1" / "commit.parquet"]
    for method in LMAD:
        outputs += [base / method / "iter0" / "generate.parquet", base / "predictions" / f"{method}.parquet"]
    before = {p: p.stat().st_mtime_ns for p in outputs}
    time.sleep(1.1)
    prompt = workdir / "prompts" / "localizer.txt"
    prompt.write_text(prompt.read_text().rstrip("\n") + " Be brief.\n")
    snakemake(workdir)
    changed = {p for p in outputs if p.stat().st_mtime_ns != before[p]}
    assert iterations / "iter0" / "localize.parquet" in changed and iterations / "iter1" / "commit.parquet" in changed
    assert iterations / "iter0" / "extract.parquet" not in changed
    for method in LMAD:
        assert base / "predictions" / f"{method}.parquet" in changed
        assert base / method / "iter0" / "generate.parquet" not in changed
    assert base / "samples" / "proposals.parquet" not in changed
    assert base / "predictions" / "cot.parquet" not in changed
