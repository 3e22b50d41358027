#!/usr/bin/env bash
# Usage: bash scripts/bootstrap.sh
# Creates .venv and installs the locked CPU dependency tree (requirements/lock-cpu.txt, with the CPU
# build torch==2.13.0) and kernelkb itself, editable. Refuses a lock that is stale against pyproject.toml
# (refresh it with scripts/lock.sh). Skipped when .venv already holds this lock.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
"$PY" scripts/lockcheck.py
[ -x .venv/bin/python ] || "$PY" -m venv .venv
stamp=.venv/.kkb-installed
want=$(cat requirements/lock-cpu.txt pyproject.toml | sha256sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q --no-deps -r requirements/lock-cpu.txt
  .venv/bin/python -m pip install -q --no-deps -e .
  echo "$want" > "$stamp"
fi
