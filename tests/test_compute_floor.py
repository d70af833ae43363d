"""benchmarks/compute_floor.py: the floor's arithmetic on a synthetic run, and the matmul probe's
bound on a dtype too slow to time at full size."""
from __future__ import annotations

import importlib.util
import json
import struct
import subprocess
import sys

from conftest import REPO

SCRIPT = REPO / "benchmarks" / "compute_floor.py"


def _module():
    spec = importlib.util.spec_from_file_location("compute_floor", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_a_dtype_over_the_budget_is_reported_at_the_probe_size():
    mod = _module()
    rate, size = mod.matmul_rate("float32", 1, n=256, reps=1, budget_s=0.0, probe=32)
    assert size == 32 and rate > 0
    rate, size = mod.matmul_rate("float32", 1, n=64, reps=1, budget_s=60.0, probe=32)
    assert size == 64 and rate > 0


def test_floor_is_tokens_times_twice_the_parameters_over_the_fastest_rate(tmp_path):
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "manifest.json").write_text(json.dumps(
        {"models": {"m": {"computed_prompt_tokens": 900_000, "computed_completion_tokens": 100_000}}}))
    folder = tmp_path / "resources" / "models" / "m"
    folder.mkdir(parents=True)
    header = json.dumps({"__metadata__": {}, "w": {"dtype": "F32", "shape": [1000, 500], "data_offsets": [0, 0]}}).encode()
    (folder / "model.safetensors").write_bytes(struct.pack("<Q", len(header)) + header)
    out = subprocess.run([sys.executable, str(SCRIPT), "--directory", str(tmp_path), "--wall", "10", "--threads", "1"],
                         capture_output=True, text=True, check=True).stdout
    report = json.loads(out[: out.index("\n}\n") + 2])
    fastest = report["fastest_dtype"]
    rate = report["matmul_gflops"][fastest]
    assert report["models"]["m"]["gflop"] == 1000.0  # 2 x 500,000 parameters x 1,000,000 tokens
    assert abs(report["floor_s"] - 1000.0 / rate) <= 0.051
    assert report["matmul_size"][fastest] in (256, 2048)
    assert f"floor at {fastest}" in out
