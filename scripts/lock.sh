#!/usr/bin/env bash
# Usage: bash scripts/lock.sh
# Recompiles requirements/lock-cpu.txt, the pinned dependency tree of the CPU install ('.[dev]', which
# holds every extra), from pyproject.toml and constraints.txt with pip-tools, then records the digest of
# the dependency lists that scripts/bootstrap.sh checks. Run it after changing a dependency; commit both.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
tools=$(mktemp -d)
trap 'rm -rf "$tools"' EXIT
"$PY" -m venv "$tools"
"$tools/bin/python" -m pip install -q "pip-tools>=7.4"
"$tools/bin/pip-compile" --quiet --extra dev --strip-extras --allow-unsafe --no-emit-index-url \
  --no-emit-find-links -c constraints.txt -o requirements/lock-cpu.txt pyproject.toml
"$PY" scripts/lockcheck.py --write
echo "wrote requirements/lock-cpu.txt"
