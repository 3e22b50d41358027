#!/usr/bin/env bash
# Usage: [LIBRARY_MEM_TOTAL_S=165] bash benchmarks/gpu/library_mem.sh [SWEEP_BUDGET_S]   (repo root, GPU box)
#
# The memory-bound families of the skill library (pointwise, softmax, log_softmax, layernorm, rmsnorm,
# groupnorm, batchnorm, reduction, cumsum, cross_entropy) on the GPU:
#   1. with SWEEP_BUDGET_S > 0, benchmarks/sweep_library.py over benchmarks/grids/*.json (each config
#      checked against the spec's reference, then triton.testing.do_bench median next to eager and
#      torch.compile), for choosing the defaults -> benchmarks/results/library_mem_sweep-<UTC>.json.
#      Default 0: skipped. The kernels' own TUNABLES defaults are what stage 2 measures.
#   2. every spec through the harness via the shared runner benchmarks/bench_library.py: checked on every
#      variant at the spec's tolerance, timed at the large shape against eager PyTorch and torch.compile
#      (CUDA events, L2 flushed). Writes benchmarks/results/library-<accelerator>-mem-<UTC>.json and
#      prints the markdown table last. Specs run in priority order (one headline spec per family first)
#      and no new spec starts once the whole script nears LIBRARY_MEM_TOTAL_S (default 165 s).
# Needs python3 with torch (CUDA), triton, numpy, pyyaml. Exit 2 when no CUDA device is present.
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${PYTHON:-python3}
BUDGET=${1:-0}
TOTAL=${LIBRARY_MEM_TOTAL_S:-165}
T0=$(date +%s)
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
FAMILIES=pointwise,softmax,log_softmax,layernorm,rmsnorm,groupnorm,batchnorm,reduction,cumsum,cross_entropy
mkdir -p benchmarks/results
if ! "$PY" -c "import sys, torch, triton
if not torch.cuda.is_available(): sys.exit(1)
print(f'[library_mem] {torch.cuda.get_device_name()} torch {torch.__version__} triton {triton.__version__} '
      f'cuda {torch.version.cuda}', flush=True)"; then
  echo "library_mem.sh: no CUDA device; on CPU run: pytest -q tests/corpus/kernels" >&2
  exit 2
fi
if [ "$BUDGET" != "0" ]; then  # the sweep tool and its grid files (benchmarks/sweep_library.py)
  "$PY" benchmarks/sweep_library.py benchmarks/grids/*.json --compile --budget-s "$BUDGET" \
    --out "benchmarks/results/library_mem_sweep-$STAMP.json" || echo "[sweep] failed (stage 2 still runs)"
fi
# the bench exits 1 when a spec did not pass; the table is printed either way
LEFT=$(( TOTAL - ($(date +%s) - T0) - 15 ))  # 15 s: start-up, teardown and the table
"$PY" benchmarks/bench_library.py --families "$FAMILIES" --label mem --budget-s "$LEFT" --spec-s 12 \
  || echo "[library_mem] some specs did not pass (see the status column)"
