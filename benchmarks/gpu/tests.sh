#!/usr/bin/env bash
# Usage: KKB_COMMIT=<sha> bash benchmarks/gpu/tests.sh LABEL [PYTEST ARGS...]   (CUDA machine, repo root)
#   e.g. KKB_COMMIT=$SHA bash benchmarks/gpu/tests.sh harness -m "gpu and not slow" tests/harness
# Runs `python3 -m pytest -o addopts='' -p no:cacheprovider -rA PYTEST ARGS` and keeps its whole output in
# benchmarks/results/logs/gpu-tests-LABEL-<gpu>-<UTC time>.log (KKB_GPU_LOG_DIR: another folder), opened by
# the provenance block of tests/gpu_log.py: this command, the commit (KKB_COMMIT where the copy has no .git),
# the source digest, the versions of python, torch, CUDA, triton, numpy and the driver, and the GPU.
# When KKB_COPY_RESULTS_TO names a folder, the log is copied there too. Exit status: pytest's.
set -u
cd "$(dirname "$0")/../.."
if [ $# -lt 1 ]; then sed -n "2,8p" "$0"; exit 2; fi
label=$1
shift
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
KKB_GPU_COMMAND="KKB_COMMIT=${KKB_COMMIT:-} bash benchmarks/gpu/tests.sh $label $(printf '%q ' "$@")"
export KKB_GPU_COMMAND="${KKB_GPU_COMMAND% }"
py=${PYTHON:-python3}
gpu=$("$py" benchmarks/gpu/cuda_device.py --id 2>/dev/null || echo unknown)  # the card: h100, h200, ...
dir=${KKB_GPU_LOG_DIR:-benchmarks/results/logs}
mkdir -p "$dir"
log="$dir/gpu-tests-$label-$gpu-$(date -u +%Y%m%dT%H%M%SZ).log"
{
  echo "# provenance (tests/gpu_log.py)"
  "$py" -m tests.gpu_log
  echo
  "$py" -m pytest -o addopts='' -p no:cacheprovider -rA "$@"
} 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
echo "pytest exit: $status" | tee -a "$log"
echo "log: $log"
if [ -n "${KKB_COPY_RESULTS_TO:-}" ] && [ -d "${KKB_COPY_RESULTS_TO:-}" ]; then cp "$log" "$KKB_COPY_RESULTS_TO"/ && echo "copied the log to $KKB_COPY_RESULTS_TO"; fi
exit "$status"
