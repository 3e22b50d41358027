#!/usr/bin/env bash
# Usage: bash scripts/wheel_smoke.sh [--full]
# Builds kernelkb's wheel from the tracked files (the build must print no warning), installs it into a
# fresh venv outside the checkout and runs kkb from an empty folder there: --version, a hardware fact, and
# an ingest of the bundled corpus into a fresh KKB_HOME. The venv takes its dependencies from .venv, which
# scripts/bootstrap.sh installed from requirements/lock-cpu.txt (a .pth line; .venv's editable kernelkb is
# not on that path), so nothing is downloaded; --full installs the lock into the venv itself instead
# (several minutes of downloads).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/src" "$work/dist" "$work/run"
git ls-files -z | tar --null -T - -cf - | tar -xf - -C "$work/src"
.venv/bin/python -m pip wheel -v --no-deps --no-build-isolation -w "$work/dist" "$work/src" >"$work/build.log" 2>&1 \
  || { cat "$work/build.log" >&2; exit 1; }
# a clean build: setuptools' warning blocks (a data folder left out of `packages`) fail the smoke test
if grep -q "Warning" "$work/build.log"; then grep "Warning" "$work/build.log" >&2; echo "wheel smoke: the build warned" >&2; exit 1; fi
"$PY" -m venv "$work/venv"
if [ "${1:-}" = "--full" ]; then
  "$work/venv/bin/python" -m pip install -q --no-deps -r requirements/lock-cpu.txt
else
  deps=$(.venv/bin/python -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
  own=$("$work/venv/bin/python" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
  echo "$deps" > "$own/kernelkb-deps.pth"
fi
"$work/venv/bin/python" -m pip install -q --no-deps "$work"/dist/kernelkb-*.whl
cd "$work/run"
unset PYTHONPATH
export KKB_HOME="$work/home" HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
kkb="$work/venv/bin/kkb"
fail() { echo "wheel smoke: $1" >&2; exit 1; }
"$kkb" --version | grep -q "^kernelkb [0-9]" || fail "kkb --version printed no version"
"$kkb" facts h100 "shared memory" | tee facts.txt
grep -q "^h100 shared_memory_per_unit = " facts.txt || fail "no h100 shared memory fact"
"$kkb" ingest --json > ingest.json || { cat ingest.json; fail "the ingest of the bundled corpus failed"; }
grep -q '"skipped": 0,' ingest.json || { cat ingest.json; fail "the ingest skipped files"; }
grep -q '"kernels": 1[0-9],' ingest.json || { cat ingest.json; fail "fewer than 10 library kernels ingested"; }
grep -q "\"$work/venv/lib/python3[.0-9]*/site-packages/kernelkb_corpus/" ingest.json \
  || { head -20 ingest.json; fail "the ingested corpus is not the installed package's"; }
"$kkb" search "shared memory per SM on the H100" -k 1
echo "wheel smoke: passed"
