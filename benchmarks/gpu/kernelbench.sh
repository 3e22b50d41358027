#!/usr/bin/env bash
# KernelBench at published sizes through the offline mode on a CUDA machine, within a time budget.
#
# Usage (repo root): bash benchmarks/gpu/kernelbench.sh KERNELBENCH SAMPLE [BUDGET_S] [SEARCH] [RESUME]
#   KERNELBENCH  a copy of KernelBench (the folder holding level1/ and level2/)
#   SAMPLE       a file naming problems, e.g. benchmarks/kernelbench_sample_other.txt
#   BUDGET_S     seconds the benchmark may take, its pre-pass included (default 510: a 600 s call)
#   SEARCH       candidates per problem (default 4)
#   RESUME       a results file of an earlier run of the same sample: its problems are kept, not rerun
#   CPU check:   DEVICE=cpu EXTRA="--max-elements 4096 --max-flops 1e6" bash benchmarks/gpu/kernelbench.sh ...
#   BASELINES=DIR  spec baselines (eager and torch.compile times) of an earlier run on the same kind of card,
#                  as this script leaves them in $RESULTS_DIR/baselines: the harness takes them instead of measuring again
#
# Writes $RESULTS_DIR/kernelbench-<card>-<UTC>.json (default RESULTS_DIR: benchmarks/results) and its log, and prints the
# per-problem table and the summary last. A hard stop 60 s after BUDGET_S keeps what was written.
set -uo pipefail
KB=${1:?usage: kernelbench.sh KERNELBENCH SAMPLE [BUDGET_S] [SEARCH] [RESUME]}
SAMPLE=${2:?usage: kernelbench.sh KERNELBENCH SAMPLE [BUDGET_S] [SEARCH] [RESUME]}
BUDGET=${3:-510}
SEARCH=${4:-4}
RESUME=${5:-}
DEVICE=${DEVICE:-cuda:0}
RESULTS_DIR=${RESULTS_DIR:-benchmarks/results}
PY=${PY:-python3}
mkdir -p "$RESULTS_DIR"
CACHE=${KKB_HARNESS_CACHE:-$HOME/.cache/kernelkb}
if [ -n "${BASELINES:-}" ] && [ -d "$BASELINES" ]; then
  mkdir -p "$CACHE/baselines" && cp -n "$BASELINES"/*.json "$CACHE/baselines/" 2>/dev/null
  echo "== $(ls "$BASELINES" | wc -l) spec baselines from $BASELINES"
fi
LOG="$RESULTS_DIR/kernelbench-run-$(date -u +%Y%m%dT%H%M%SZ).log"
[ "$DEVICE" != cpu ] && command -v nvidia-smi >/dev/null && nvidia-smi -L
args=(benchmarks/bench_kernelbench.py --kernelbench "$KB" --device "$DEVICE" --sample "$SAMPLE"
      --search "$SEARCH" --budget-s "$BUDGET" --out-dir "$RESULTS_DIR")
[ -n "$RESUME" ] && args+=(--resume "$RESUME")
# shellcheck disable=SC2206
[ -n "${EXTRA:-}" ] && args+=($EXTRA)
echo "== $PY ${args[*]}"
timeout -k 10 $((BUDGET + 60)) "$PY" "${args[@]}" > "$LOG" 2>&1
rc=$?
mkdir -p "$RESULTS_DIR/baselines" && cp "$CACHE"/baselines/*.json "$RESULTS_DIR/baselines/" 2>/dev/null
grep -v '^|' "$LOG" | tail -n 40
echo "== exit $rc; log $LOG"
RESULTS=$(ls -t "$RESULTS_DIR"/kernelbench-*.json 2>/dev/null | head -n 1)
[ -n "$RESULTS" ] && "$PY" - "$RESULTS" <<'EOF'
import json, sys
sys.path.insert(0, ".")
from benchmarks.kernelbench_rows import summary, table
d = json.load(open(sys.argv[1]))
print(f"== {sys.argv[1]}: {d['card']['name']}, --search {d['search']}, {d.get('elapsed_s')} s")
print(table(d["problems"]))
s = summary(d["problems"], d["summary"].get("not_reached", []))
print(json.dumps({k: s[k] for k in ("passed", "problems", "geomean_vs_compile", "below_0.97_vs_compile")
                  if k in s} | {"not_reached": s.get("not_reached", [])}))
EOF
exit $rc
