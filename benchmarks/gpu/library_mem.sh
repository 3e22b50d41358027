#!/usr/bin/env bash
# Usage: bash benchmarks/gpu/library_mem.sh [EXTRA bench_library.py ARGS...]   (from the repo root, on the GPU box)
#
# The memory-bound families of the skill library (pointwise, softmax, log_softmax, layernorm, rmsnorm,
# groupnorm, batchnorm, reduction, cumsum, cross_entropy) through the harness on the GPU, via the shared
# runner benchmarks/bench_library.py: each kernel is checked on every variant of each of its specs, then
# timed at the spec's large shape against eager PyTorch and torch.compile (CUDA events, L2 flushed).
# Writes benchmarks/results/library-<accelerator>-mem-<UTC>.json and prints the markdown table last.
# Needs python3 with torch (CUDA), triton, numpy, pyyaml. Exit 2 when no CUDA device is present.
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${PYTHON:-python3}
FAMILIES=pointwise,softmax,log_softmax,layernorm,rmsnorm,groupnorm,batchnorm,reduction,cumsum,cross_entropy
if ! "$PY" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)"; then
  echo "library_mem.sh: no CUDA device; on CPU run: pytest -q tests/corpus/kernels" >&2
  exit 2
fi
"$PY" -c "import torch, triton; print(f'[library_mem] {torch.cuda.get_device_name()} torch {torch.__version__} \
triton {triton.__version__} cuda {torch.version.cuda}', flush=True)"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv,noheader 2>/dev/null || true
# the bench exits 1 when a spec did not pass; the table is printed either way
"$PY" benchmarks/bench_library.py --families "$FAMILIES" --label mem "$@" || echo "[library_mem] some specs did not pass (see the status column)"
