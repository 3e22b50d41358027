#!/usr/bin/env bash
# Usage: bash scripts/bootstrap.sh
# Creates .venv and installs kernelkb with its dev extras. On a machine without CUDA the
# constraints file keeps pip on the CPU torch build (torch==2.13.0); it is skipped when the
# install is already up to date with pyproject.toml.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
stamp=.venv/.kkb-installed
want=$(cat pyproject.toml constraints.txt | sha256sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -c constraints.txt -e '.[dev]'
  echo "$want" > "$stamp"
fi
