#!/usr/bin/env bash
# Usage: bash scripts/test.sh [PYTEST ARGS...]
# Installs what the suite needs (.venv, headless Chromium for the report test) and runs every test.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
if ! command -v chromium >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
    || echo "warning: could not install chromium; the report rendering test will be skipped" >&2
fi
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TRITON_INTERPRET=${TRITON_INTERPRET:-1}
# Two workers by default (KKB_TEST_WORKERS=0 runs in one process): most of the suite's time is Triton's
# interpreter, which runs on one core, and every test keeps to its own temporary folders and free ports.
exec .venv/bin/python -m pytest -n "${KKB_TEST_WORKERS:-2}" --dist worksteal "$@"
