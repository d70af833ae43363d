"""Real `snakemake` runs of the last step on edge results: a run in which CoT scores
100 % and every other method 0 % builds every analysis and paper output, and a failing
analysis or paper job, once fixed, finishes with no model call (tests/oracle.py sets the
answers and logs every call that reaches the model)."""
import csv
import os
import shutil

import pytest

from conftest import REPO, make_config, scripted_model, snakemake, stored_calls, write_config

DATASETS = ["hotpotqa", "strategyqa"]
METHODS = ["cot", "sc", "mad", "lmad", "lmad-concrete", "lmad-always"]
PAPER = ["table1.csv", "table1.md", "table1.tex", "table2.csv", "table2.md", "table2.tex", "cost.csv", "cost.md",
         "headroom.csv", "headroom.md", "dynamics.csv", "dynamics.md", "accuracy.png", "accuracy.pdf",
         "pareto.png", "pareto.pdf", "rounds.png", "rounds.pdf", "lmad_trace.png", "lmad_trace.pdf",
         "viewer/oracle.html"]
ANALYSIS = ["accuracy.parquet", "table.csv", "table.md", "delta.csv", "accuracy.png", "accuracy.pdf"]


def calls(workdir) -> int:
    log = workdir / "oracle_calls.log"
    return len(log.read_text().splitlines()) if log.exists() else 0


def run(workdir, *args, check=True):
    env = {"ORACLE_CALL_LOG": str(workdir / "oracle_calls.log"),
           "PYTHONPATH": os.pathsep.join([str(REPO / "tests"), os.environ.get("PYTHONPATH", "")])}
    return snakemake(workdir, *args, check=check, env=env)


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("edges")
    # n = 4: CoT's 4 of 4 is a cell whose Wilson bound must not make a negative error bar
    config = make_config(workdir, n=4, models={"oracle": {**scripted_model(), "responder": "oracle:respond"}},
                         backbones=["oracle"], methods=METHODS, lmad={"iterations": 1, "local_rounds": 1},
                         debate={"rounds": 1}, paper={"bootstrap_resamples": 200, "trace_questions": 1})
    config["datasets"] = {d: config["datasets"][d] for d in DATASETS}
    # the responder's judge knows only its own answers, so it fails the known-answer battery; the
    # 100 % / 0 % cells are judge accuracy, shown on request (with the failure stated above them)
    config["analysis"]["metric"] = "judge"
    write_config(workdir, config)
    proc = run(workdir, "all", "paper")
    return workdir, proc


def test_a_100_and_a_0_percent_method_build_every_output(finished):
    workdir, proc = finished
    assert proc.returncode == 0
    for name in PAPER:
        assert (workdir / "results" / "paper" / name).stat().st_size > 0, name
    for name in ANALYSIS:
        assert (workdir / "results" / "oracle" / "analysis" / name).stat().st_size > 0, name
    rows = {r["dataset"]: r for r in csv.DictReader((workdir / "results/paper/table1.csv").open())}
    for d in [*DATASETS, "Avg."]:
        assert float(rows[d]["cot"]) == 100.0 and float(rows[d]["sc"]) == 0.0 and float(rows[d]["lmad"]) == 0.0
    avg = rows["Avg."]   # Δ = LMAD − CoT = −100, and its interval stays within [−100, 100]
    assert float(avg["delta"]) == -100.0 and float(avg["delta_ci_lo"]) == float(avg["delta_ci_hi"]) == -100.0
    assert "Table 2 is empty" in (workdir / "results/paper/table2.md").read_text()
    assert calls(workdir) > 0


def test_a_fixed_analysis_or_paper_failure_reruns_with_no_model_call(finished):
    workdir, _ = finished
    before = calls(workdir)
    cache = stored_calls(workdir / "cache")
    # make the analysis job and a paper job rerun, and fail: a directory where each writes a file
    (workdir / "results/oracle/analysis/table.md").unlink()
    (workdir / "results/paper/table1.csv").unlink()
    blocks = [workdir / "results/oracle/analysis/delta.csv", workdir / "results/paper/.table1.csv.tmp"]
    (workdir / "results/oracle/analysis/delta.csv").unlink()
    for block in blocks:
        block.mkdir()
    failed = run(workdir, "all", "paper", "--keep-going", check=False)
    assert failed.returncode != 0
    logs = (workdir / "logs/oracle/analyze.log").read_text() + (workdir / "logs/paper/table1.log").read_text()
    assert logs.count("IsADirectoryError") >= 2
    for block in blocks:   # the fix
        shutil.rmtree(block)
    fixed = run(workdir, "all", "paper")
    assert fixed.returncode == 0
    assert calls(workdir) == before                           # no call reached the model
    assert stored_calls(workdir / "cache") == cache
    assert (workdir / "results/paper/table1.csv").exists() and (workdir / "results/oracle/analysis/table.md").exists()
    dry = run(workdir, "all", "paper", "--dry-run")
    assert "Nothing to be done" in dry.stdout + dry.stderr
