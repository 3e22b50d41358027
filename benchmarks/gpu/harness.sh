#!/usr/bin/env bash
# Usage: bash benchmarks/gpu/harness.sh   (from the repo root on the GPU box; about 7 minutes)
# GPU validation of the benchmark harness:
#   1. python3 -m pytest -m gpu tests/harness            (GPU tests; CPU ones are deselected)
#   2. kkb bench --suite examples/specs (eager baselines) -> benchmarks/results/harness-suite-examples-<gpu>.json
#   3. benchmarks/bench_harness.py -> benchmarks/results/harness-h200-<UTC time>.json, short table last
set -u
cd "$(dirname "$0")/../.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
export KKB_HARNESS_CACHE="${KKB_HARNESS_CACHE:-/tmp/kkb_harness_cache}"
mkdir -p benchmarks/results
python3 -c "import torch, triton, sys; print('python', sys.version.split()[0], 'torch', torch.__version__, 'triton', triton.__version__, 'cuda', torch.cuda.is_available(), torch.cuda.get_device_name(0) if torch.cuda.is_available() else '')"
echo "== 1. GPU tests: python3 -m pytest -m gpu tests/harness =="
timeout 200 python3 -m pytest -m gpu tests/harness -q -p no:cacheprovider -o addopts="" 2>&1 | tail -n 40
echo "pytest exit: ${PIPESTATUS[0]}"
echo "== 2. suite: examples/specs, eager baselines only =="
timeout 100 python3 -m harness.cli --suite examples/specs --device cuda:0 --no-compile-baseline \
  --json benchmarks/results/harness-suite-examples-h200.json 2>&1 | tail -n 30
echo "suite exit: ${PIPESTATUS[0]}"
echo "== 3. bench_harness.py =="
timeout 330 python3 benchmarks/bench_harness.py --out-dir benchmarks/results
echo "bench exit: $?"
# hand the results files back when run through the device tool ($OUT comes back to the lead's machine)
if [ -n "${OUT:-}" ] && [ -d "${OUT:-}" ]; then
  cp benchmarks/results/harness-*.json "$OUT"/ 2>/dev/null && echo "copied results to \$OUT"
fi
