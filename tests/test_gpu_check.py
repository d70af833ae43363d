"""benchmarks/gpu_check.sh: its CPU smoke mode runs here (the transformers check on a tiny
generated model), and its workflow report reads a run's files as the workflow writes them."""
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import REPO

sys.path.insert(0, str(REPO / "benchmarks"))
import gpu_check  # noqa: E402


@pytest.fixture(scope="module")
def smoke():
    env = {k: v for k, v in os.environ.items() if not k.startswith("LMAD_GPU_CHECK")}
    t0 = time.monotonic()
    proc = subprocess.run(["bash", str(REPO / "benchmarks" / "gpu_check.sh"), "--cpu"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=120)
    return proc, time.monotonic() - t0


def lines(out: str) -> list[str]:
    return [line for line in out.splitlines() if line.startswith("gpu_check: ")]


def test_cpu_smoke_mode_passes_and_says_what_it_skipped(smoke):
    proc, seconds = smoke
    out = lines(proc.stdout)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    assert seconds < 60
    assert any(line.startswith("gpu_check: importable: ") and "torch" in line for line in out)
    # the GPU and vLLM steps are skipped, each with its reason
    for step in ("install", "smollm2", "transformers-cuda", "vllm-workflow", "vllm-raw", "vllm-engine-tests"):
        skip = [line for line in out if line.startswith(f"gpu_check: SKIP {step}: ")]
        assert skip, f"no skip line for {step}"
        assert "--cpu smoke mode" in skip[0]
    vllm_skip = next(line for line in out if line.startswith("gpu_check: SKIP vllm-workflow: "))
    import importlib.util

    if importlib.util.find_spec("vllm") is None:
        assert "vllm is not importable" in vllm_skip
    # the transformers backend ran on the CPU and reported its throughput
    tps = [line for line in out if line.startswith("gpu_check: transformers tokens/s: ")]
    assert len(tps) == 1
    m = re.match(r"gpu_check: transformers tokens/s: ([\d.]+) on cpu \(forward ran on cpu", tps[0])
    assert m and float(m.group(1)) > 0, tps[0]
    assert "gpu_check: PASS transformers-cpu" in proc.stdout
    assert re.search(r"gpu_check: summary: passed [1-9]\d*, failed 0, skipped \d+", proc.stdout)


def test_a_failing_step_is_reported_and_the_run_goes_on(tmp_path, capsys):
    args = type("Args", (), {"budget_s": 60.0, "cpu": True})()
    run = gpu_check.Run(args)

    def broken():
        raise ValueError("no such thing")

    def skipped():
        raise gpu_check.Skip("not here")

    run.step("first", broken)
    run.step("second", skipped)
    run.step("third", lambda: "fine")
    assert run.summary() == 1
    out = capsys.readouterr().out
    assert "gpu_check: FAIL first" in out and "ValueError: no such thing" in out
    assert "gpu_check: SKIP second: not here" in out and "gpu_check: PASS third" in out
    assert [s[1] for s in run.steps] == ["FAIL", "SKIP", "PASS"]


def _job(work: Path, log: str, rule: str, start: float, took: float, stats: dict | None):
    path = work / log
    path.parent.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(start + took))
    path.write_text(f"{stamp},000 INFO lmad.stages.x: did things\n{stamp},001 INFO root: rule {rule} took {took} s "
                    "(process CPU 1.00 s)\n")
    if stats is not None:
        path.with_suffix(".stats.json").write_text(json.dumps(stats))


def _segment(work: Path, name: str, tokens: list[int], mtime: float):
    seg = work / "cache" / "smol@abc" / f"{name}.calls.jsonl"
    seg.parent.mkdir(parents=True, exist_ok=True)
    seg.write_text("".join(json.dumps({"key": f"k{i}", "text": "x", "prompt_tokens": 10, "completion_tokens": t,
                                       "finish_reason": "stop", "sanitized": False, "sha256": "0"}) + "\n"
                           for i, t in enumerate(tokens)))
    os.utime(seg, (mtime, mtime))


def test_workflow_report_reads_manifest_logs_stats_and_segments(tmp_path, capsys):
    work = tmp_path
    (work / "results").mkdir()
    (work / "results" / "manifest.json").write_text(json.dumps(
        {"engine_starts": {"smol": 1}, "model_loads": {"smol": 0},
         "models": {"smol": {"backend": "vllm", "stage_logs": 3, "loads": 0, "server_starts": 1, "engine_starts": 1}}}))
    (work / "logs" / "serve").mkdir(parents=True)
    (work / "logs" / "serve" / "smol.log").write_text("serving: python -m vllm...\n")
    t = float(int(time.time()) - 100)
    # two jobs at the same time: their segments are told apart by their number of calls
    _job(work, "logs/smol/generate/proposals.log", "generate", t, 10.0,
         {"calls": 6, "hits": 0, "misses": 6, "loads": 0, "models": ["smol@abc"]})
    _job(work, "logs/smol/generate/cot.log", "generate", t, 8.0,
         {"calls": 2, "hits": 0, "misses": 2, "loads": 0, "models": ["smol@abc"]})
    # a job whose stats carry token counts: taken from there
    _job(work, "logs/smol/hotpotqa/judge.log", "judge", t + 20, 5.0,
         {"calls": 4, "hits": 0, "misses": 4, "loads": 0, "models": ["smol@abc"], "computed_completion_tokens": 40,
          "computed_prompt_tokens": 400})
    _job(work, "logs/prepare_data/hotpotqa.log", "prepare_data", t - 5, 1.0, None)
    _segment(work, "host-1-a", [10] * 6, t + 9)
    _segment(work, "host-2-b", [20, 30], t + 7)
    jobs, segs = gpu_check.stage_jobs(work)
    by = {j["log"]: j for j in jobs}
    assert "logs/serve/smol.log" not in by
    assert by["logs/smol/generate/proposals.log"]["completion_tokens"] == 60
    assert by["logs/smol/generate/proposals.log"]["tok_s"] == 6.0
    assert by["logs/smol/generate/cot.log"]["completion_tokens"] == 50
    assert by["logs/smol/hotpotqa/judge.log"]["tokens_from"] == "stats file"
    assert (by["logs/smol/hotpotqa/judge.log"]["completion_tokens"], by["logs/smol/hotpotqa/judge.log"]["tok_s"]) == (40, 8.0)
    assert by["logs/prepare_data/hotpotqa.log"]["wall_s"] == 1.0 and "completion_tokens" not in by[
        "logs/prepare_data/hotpotqa.log"]
    assert all(s["job"] for s in segs)

    got = gpu_check.report_workflow(work, wall=30.0)
    out = capsys.readouterr().out
    assert got["engine_starts"] == {"smol": 1}
    assert 'gpu_check: engine starts per model (results/manifest.json): {"smol": 1}' in out
    assert "server log smol.log: 1 server start(s)" in out
    assert "stage generate: 110 generated tokens in 18.0 s of job wall time = 6.1 tok/s" in out
    assert "whole run: 110 generated tokens in 30.0 s" in out
