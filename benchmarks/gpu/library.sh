#!/usr/bin/env bash
# Usage: bash benchmarks/gpu/library.sh [LABEL] [bench_library.py options...]   (repo root, a CUDA machine)
#        e.g. bash benchmarks/gpu/library.sh all        (every spec once: about 6-8 minutes)
#             bash benchmarks/gpu/library.sh rest --specs batchnorm_train_bf16,softmax_bf16
# The skill library on the GPU: every spec of every family once through the harness (benchmarks/bench_library.py:
# each kernel checked on every variant at the spec's tolerance, then timed at the spec's large shape next to
# eager PyTorch and torch.compile, L2 flushed), after 15 s of load from a separate process (an idle GPU times its
# first specs bimodal). No new spec starts once LIBRARY_BUDGET_S (default 470) seconds are spent.
# Writes benchmarks/results/library-<accelerator>-<LABEL>-<UTC>.json, then sets each spec's latency beside the
# library table's (the kernel.yaml measurements, scripts/library_table.py --compare) in
# benchmarks/results/library-compare-<LABEL>-<UTC>.json; exits 1 where a spec did not pass, did not run or is
# more than 3% slower than the table. When KKB_COPY_RESULTS_TO names a folder, both files are copied there too.
# Needs python3 with torch (CUDA), triton, numpy and pyyaml. Exit 2 when no CUDA device is present.
set -uo pipefail
cd "$(dirname "$0")/../.."
PY=${PYTHON:-python3}
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
LABEL=${1:-all}
shift || true
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p benchmarks/results
"$PY" benchmarks/gpu/cuda_device.py library.sh || exit 2
"$PY" benchmarks/gpu/prewarm.py "${KKB_PREWARM_S:-15}"
RESULTS=benchmarks/results/library-$("$PY" benchmarks/gpu/cuda_device.py --id)-$LABEL-$STAMP.json
"$PY" benchmarks/bench_library.py --all --label "$LABEL" --out "$RESULTS" --budget-s "${LIBRARY_BUDGET_S:-470}" \
  --spec-s 12 --prewarm-workers 0 --trials 1 --max-timing-s 0.3 "$@"
BENCH=$?
COMPARE=benchmarks/results/library-compare-$LABEL-$STAMP.json
"$PY" scripts/library_table.py --compare "$RESULTS" --json "$COMPARE"
STATUS=$?
if [ -n "${KKB_COPY_RESULTS_TO:-}" ] && [ -d "${KKB_COPY_RESULTS_TO:-}" ]; then cp "$RESULTS" "$COMPARE" "$KKB_COPY_RESULTS_TO"/; fi
echo "library.sh: bench exit $BENCH, comparison exit $STATUS ($RESULTS, $COMPARE)"
[ "$BENCH" = 0 ] && [ "$STATUS" = 0 ]
