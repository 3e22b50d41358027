#!/usr/bin/env bash
# Usage: [SWEEP_BUDGET_S=240] bash benchmarks/gpu/sweep.sh [GRID.json ...]   (repo root, a CUDA machine)
# Sweeps the skill library's TUNABLES over the grid files (default: every corpus/kernels/*/grids/*.json) with
# benchmarks/sweep_library.py: each config checked against the spec's reference, then timed with
# triton.testing.do_bench next to eager and torch.compile of the reference. Writes
# benchmarks/results/sweep-<UTC>.json (copied into the folder KKB_COPY_RESULTS_TO names too, when set).
set -u
cd "$(dirname "$0")/../.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
GRIDS=("$@")
[ ${#GRIDS[@]} -eq 0 ] && GRIDS=(corpus/kernels/*/grids/*.json)
python3 benchmarks/gpu/prewarm.py "${KKB_PREWARM_S:-15}"  # an idle GPU times its first specs bimodal
python3 benchmarks/sweep_library.py "${GRIDS[@]}" --compile --budget-s "${SWEEP_BUDGET_S:-240}" \
  --out "benchmarks/results/sweep-$STAMP.json"
echo "sweep exit: $?"
if [ -n "${KKB_COPY_RESULTS_TO:-}" ] && [ -d "${KKB_COPY_RESULTS_TO:-}" ]; then cp "benchmarks/results/sweep-$STAMP.json" "$KKB_COPY_RESULTS_TO"/; fi
