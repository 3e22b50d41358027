#!/usr/bin/env bash
# Usage: bash benchmarks/gpu/harness.sh   (from the repo root on a CUDA machine)
#        KKB_HARNESS_BUDGET_S=190 bash benchmarks/gpu/harness.sh   (default budget 145 s in all)
#        KKB_HARNESS_WITH_CUDA=1 ...   also the CUDA (load_inline) crash case: nvcc adds 30-60 s
# GPU validation of the benchmark harness, within the budget:
#   1. benchmarks/bench_harness.py -> benchmarks/results/harness-<card>-<UTC time>.json (rewritten after each
#      section, so a kill keeps what was measured); prints a short table last
#   2. bash benchmarks/gpu/tests.sh harness -m "gpu and not slow" tests/harness   (the GPU tests; ~30 s; their
#      log, opened by its provenance, under benchmarks/results/logs/)
set -u
cd "$(dirname "$0")/../.."
BUDGET="${KKB_HARNESS_BUDGET_S:-145}"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
export KKB_HARNESS_CACHE="${KKB_HARNESS_CACHE:-/tmp/kkb_harness_cache}"
mkdir -p benchmarks/results
echo "== 1. bench_harness.py (budget $((BUDGET - 95)) s) =="
timeout $((BUDGET - 90)) python3 benchmarks/bench_harness.py --out-dir benchmarks/results --budget-s $((BUDGET - 95)) \
  ${KKB_HARNESS_WITH_CUDA:+--with-cuda}
echo "bench exit: $?"
echo "== 2. GPU tests: benchmarks/gpu/tests.sh harness -m 'gpu and not slow' tests/harness =="
# the whole log, with the command, commit, source digest and versions, lands in benchmarks/results/logs/
timeout 90 bash benchmarks/gpu/tests.sh harness -m "gpu and not slow" tests/harness -q 2>&1 | tail -n 30
echo "tests exit: ${PIPESTATUS[0]}"
# when KKB_COPY_RESULTS_TO names a folder, the results files are copied there too
if [ -n "${KKB_COPY_RESULTS_TO:-}" ] && [ -d "${KKB_COPY_RESULTS_TO:-}" ]; then
  cp benchmarks/results/harness-*.json "$KKB_COPY_RESULTS_TO"/ 2>/dev/null && echo "copied results to $KKB_COPY_RESULTS_TO"
fi
