#!/usr/bin/env bash
# Usage: bash scripts/main.sh [SPEC]
# The main job on the embedded default: installs .venv, builds the knowledge base from corpus/ under
# $KKB_HOME (default ~/.local/share/kernelkb), answers a search, runs a short offline tuning session on
# a bundled example spec (on the GPU if there is one, else through the Triton interpreter) and writes
# the session's HTML report.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
KKB=.venv/bin/kkb
if .venv/bin/python -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)"; then
  DEVICE=cuda:0 SPEC=${1:-examples/specs/rmsnorm.py}
else  # no GPU: Triton's interpreter on the CPU, at sizes it runs in seconds
  export TRITON_INTERPRET=1
  DEVICE=cpu SPEC=${1:-examples/specs/rmsnorm_cpu.py}
fi
$KKB ingest corpus
$KKB search "shared memory per SM on the H100" -k 3
$KKB tune "$SPEC" --target h200 --backend triton --provider offline --device "$DEVICE" --budget 6
