#!/usr/bin/env bash
# Usage: bash benchmarks/gpu/harness.sh   (from the repo root on the GPU box; about 6 minutes)
# GPU validation of the benchmark harness: the GPU tests, then benchmarks/bench_harness.py, which writes
# benchmarks/results/harness-h200-<UTC time>.json and prints a short table last.
set -u
cd "$(dirname "$0")/../.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
export KKB_HARNESS_CACHE="${KKB_HARNESS_CACHE:-/tmp/kkb_harness_cache}"
python3 -c "import torch, triton, sys; print('python', sys.version.split()[0], 'torch', torch.__version__, 'triton', triton.__version__, 'cuda', torch.cuda.is_available())"
echo "== GPU tests (pytest -m gpu tests/harness) =="
timeout 200 python3 -m pytest -m gpu tests/harness -q -x -p no:cacheprovider -o addopts="" 2>&1 | tail -n 40
echo "pytest exit: ${PIPESTATUS[0]}"
echo "== bench_harness.py =="
timeout 330 python3 benchmarks/bench_harness.py --out-dir benchmarks/results
echo "bench exit: $?"
