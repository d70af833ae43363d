#!/usr/bin/env bash
# The GPU checks in one guarded run (<= 10 min) for a lent GPU machine with no network:
#   bash benchmarks/gpu_check.sh          (from the repository root)
#   bash benchmarks/gpu_check.sh --cpu    (smoke mode, any machine: the transformers check on CPU, tiny model)
# What runs depends on what is importable: with a CUDA build of vllm, a paper-shaped served
# workflow run (engine starts per model, wall time and tokens/s per stage job), the raw engine's
# tokens/s on the same prompts (benchmarks/p1_stage_vs_raw.py) and the engine tests; with torch
# on CUDA, the transformers backend on a generated SmolLM2-shaped model. Every step is guarded and
# prints PASS, FAIL (why) or SKIP (why); exit 0 when every step that ran passed. Steps, options and
# environment (LMAD_GPU_CHECK_MODEL, LMAD_GPU_CHECK_TOKENIZER, LMAD_WHEELS, LMAD_GPU_CHECK_CPU):
# benchmarks/gpu_check.py's docstring and --help.
set -uo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD/workflow${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
PY=${PYTHON:-python3}
# the driver keeps its own budget (570 s); this is the backstop of the 10-minute limit
timeout -k 5 595 "$PY" benchmarks/gpu_check.py "$@"
rc=$?
[ "$rc" -eq 124 ] && echo "gpu_check: FAIL the whole check ran past 595 s and was killed"
exit "$rc"
