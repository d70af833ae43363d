"""A job's fixed cost is mostly imports: a stage reads and writes its Parquet without
pulling in pyarrow or pandas (0.3-0.5 s CPU per job together; no stage uses them), its files
read the same through pyarrow's own reader, and pandas still works for whoever asks."""
import json
import subprocess
import sys

from conftest import REPO

PROBE = r"""
import json, sys
from lmad.schemas import provenance_of, read_table, write_table

path = sys.argv[1]
rows = [{"qid": "q2", "dataset": "d", "method": "cot", "prediction": "Paris", "prediction_norm": "paris",
         "stop_reason": "final", "stop_round": 0, "calls": 1, "prompt_tokens": 10, "completion_tokens": 3},
        {"qid": "q1", "dataset": "d", "method": "cot", "prediction": "ünï", "prediction_norm": None,
         "stop_reason": "final", "stop_round": 0, "calls": 1, "prompt_tokens": 10, "completion_tokens": 3}]
write_table("predictions", rows, path, {"rule": "probe"})
frame = read_table("predictions", path, keys=True)   # the whole file, its key columns too
provenance = provenance_of(path)["rule"]
loaded = sorted(k for k in ("pandas", "pyarrow", "matplotlib") if k in sys.modules)
import pyarrow.parquet as pq
same = frame.to_arrow().equals(pq.read_table(path).cast(frame.to_arrow().schema))
frame.to_arrow().to_pandas()   # pandas itself still works when asked for
print(json.dumps({"loaded": loaded, "same": same, "qids": frame["qid"].to_list(), "provenance": provenance,
                  "pandas_after": "pandas" in sys.modules}))
"""


def test_a_stage_reads_and_writes_parquet_without_pandas(tmp_path):
    proc = subprocess.run([sys.executable, "-c", PROBE, str(tmp_path / "p.parquet")], capture_output=True, text=True,
                          env={"PYTHONPATH": str(REPO / "workflow"), "PATH": "/usr/bin:/bin"}, check=True)
    out = json.loads(proc.stdout)
    assert out == {"loaded": [], "same": True, "qids": ["q1", "q2"], "provenance": "probe", "pandas_after": True}


def test_stage_modules_import_no_plotting_or_model_library():
    code = ("import sys; import lmad.smk, lmad.stages.predict, lmad.stages.debate, lmad.stages.localized_debate, "
            "lmad.stages.judge, lmad.stages.analyze, lmad.stages.paper; "
            "print([k for k in ('pandas', 'pyarrow', 'matplotlib', 'torch', 'transformers', 'scipy') if k in sys.modules])")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          env={"PYTHONPATH": str(REPO / "workflow"), "PATH": "/usr/bin:/bin"})
    assert proc.stdout.strip() == "[]"
