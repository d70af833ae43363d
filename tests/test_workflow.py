"""Real `snakemake` runs of the whole DAG on a tiny config with the test double."""
import os
import re

import polars as pl
import pytest

from conftest import DATASETS, REPO, make_config, scripted_model, snakemake, stored_calls, write_config


def mtimes(root, pattern):
    return {p: p.stat().st_mtime_ns for p in sorted(root.glob(pattern))}


def cache_entries(workdir):
    return stored_calls(workdir / "cache")


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """One full run shared by the tests below, which run in file order; each leaves
    the workdir complete (the caching tests rerun what they invalidate)."""
    workdir = tmp_path_factory.mktemp("run")
    config = make_config(workdir)
    snakemake(workdir)
    return workdir, config


def test_full_run_produces_every_table(finished):
    workdir, _ = finished
    analysis = workdir / "results" / "scripted" / "analysis"
    for name in ["table.md", "table.csv", "delta.csv", "accuracy.png", "accuracy.pdf", "accuracy.parquet"]:
        assert (analysis / name).stat().st_size > 0, name
    table = pl.read_csv(analysis / "table.csv")
    assert table["dataset"].to_list() == [*DATASETS, "Avg."]
    assert set(table.columns) == {"metric", "dataset", "cot", "sc"}
    preds = pl.read_parquet(workdir / "results/scripted/hotpotqa/predictions/sc.parquet")
    assert preds["calls"].to_list() == [3, 3]
    # every rule logged something
    assert all(p.stat().st_size > 0 for p in (workdir / "logs").rglob("*.log"))


def test_second_run_has_nothing_to_do(finished):
    workdir, _ = finished
    proc = snakemake(workdir, "--dry-run")
    assert "Nothing to be done" in proc.stdout + proc.stderr


def test_touching_unchanged_prompts_reruns_nothing(finished):
    """The workflow profile (profiles/default) keeps Snakemake's checksums of small inputs: a
    prompt whose modification time changes but whose text does not (a git checkout) reruns nothing."""
    workdir, _ = finished
    for prompt in (workdir / "prompts").glob("*.txt"):
        os.utime(prompt)
    proc = snakemake(workdir, "--dry-run")
    assert "Nothing to be done" in proc.stdout + proc.stderr


def test_editing_judge_prompt_reruns_only_judging_and_analysis(finished):
    workdir, config = finished
    upstream = mtimes(workdir / "results", "scripted/*/samples/*.parquet") | mtimes(
        workdir / "results", "scripted/*/predictions/*.parquet")
    downstream = mtimes(workdir / "results", "scripted/*/judgments.parquet")
    before = cache_entries(workdir)
    prompt = workdir / "prompts" / "judge.txt"
    prompt.write_text(prompt.read_text().replace("Reply with one word", "Answer with exactly one word"))

    proc = snakemake(workdir, "--dry-run")
    planned = set(re.findall(r"^rule (\w+):", proc.stdout, flags=re.MULTILINE))
    # judging and everything computed from judgments (per-backbone analysis, paper tables)
    assert "judge" in planned
    assert {r for r in planned if not r.startswith("paper")} <= {"judge", "judge_validation", "analyze", "plot_accuracy",
                                                                 "manifest", "all"}

    snakemake(workdir)
    assert upstream == mtimes(workdir / "results", "scripted/*/samples/*.parquet") | mtimes(
        workdir / "results", "scripted/*/predictions/*.parquet")
    after_judged = mtimes(workdir / "results", "scripted/*/judgments.parquet")
    assert all(after_judged[p] != downstream[p] for p in downstream)
    # the only new model calls are judge calls: zero generation calls
    new = cache_entries(workdir) - before
    judge_logs = "".join(p.read_text() for p in [*(workdir / "logs").rglob("judge.log"),
                                                  *(workdir / "logs" / "judge_validation").glob("*.log")])
    misses = sum(int(m) for m in re.findall(r"misses=(\d+)", judge_logs))
    # <=, not ==: judge and judge_validation run at once and may both miss one call that
    # they share (the same question and candidate), which the store then holds once
    assert 0 < len(new) <= misses


def test_adding_a_backbone_adds_jobs_without_rerunning_the_first(finished):
    workdir, config = finished
    first = mtimes(workdir / "results", "scripted/**/*")
    config["models"]["scripted-b"] = scripted_model("b")
    config["backbones"].append("scripted-b")
    write_config(workdir, config)
    snakemake(workdir)
    assert mtimes(workdir / "results", "scripted/**/*") == first
    assert (workdir / "results/scripted-b/analysis/table.md").exists()


def test_test_double_is_refused_in_a_user_config(workdir):
    make_config(workdir)
    env_free = {k: v for k, v in os.environ.items() if k != "LMAD_ALLOW_TEST_DOUBLE"}
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"),
                           "--directory", str(workdir), "--configfile", str(workdir / "config.yaml"), "-n"],
                          env=env_free, capture_output=True, text=True)
    assert proc.returncode != 0 and "models.scripted.backend" in proc.stdout + proc.stderr


def test_config_typo_fails_with_the_key(workdir):
    config = make_config(workdir)
    config["solver"]["max_token"] = 5
    write_config(workdir, config)
    proc = snakemake(workdir, "--dry-run", check=False)
    assert proc.returncode != 0 and "max_token" in proc.stdout + proc.stderr


def test_lint_is_clean():
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-m", "snakemake", "--lint"], cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Congratulations" in proc.stdout + proc.stderr or "no issues" in (proc.stdout + proc.stderr).lower()
