"""Usage: python scripts/lockcheck.py [--write]

Checks that requirements/lock-cpu.txt was compiled from the current dependency lists of pyproject.toml
(and constraints.txt); exits 1 with the command that refreshes it when they differ. `--write` records the
current lists' digest in the lock and drops the line pip-compile writes for kernelkb itself (a path on the
machine that compiled it: the extras name kernelkb[...]), so the lock holds dependencies only
(scripts/lock.sh does this after compiling).
"""

from __future__ import annotations

import hashlib
import json
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LOCK = REPO / "requirements" / "lock-cpu.txt"
MARK = "# dependency-lists-sha256: "
SELF = "kernelkb @ "  # pip-compile's line for the project itself, followed by its "# via" comments


def digest() -> str:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    lists = {"dependencies": project.get("dependencies", []),
             "optional": project.get("optional-dependencies", {}),
             "constraints": (REPO / "constraints.txt").read_text().split("\n")}
    return hashlib.sha256(json.dumps(lists, sort_keys=True).encode()).hexdigest()


def recorded() -> str | None:
    for line in LOCK.read_text().splitlines():
        if line.startswith(MARK):
            return line.removeprefix(MARK).strip()
    return None


def without_self(lines: list[str]) -> list[str]:
    out, skipping = [], False
    for line in lines:
        if line.startswith(SELF):
            skipping = True
            continue
        if skipping and line.startswith("    #"):
            continue
        skipping = False
        out.append(line)
    return out


def main(argv: list[str]) -> int:
    if not LOCK.is_file():
        print(f"error: {LOCK.relative_to(REPO)} is missing; create it with `bash scripts/lock.sh`", file=sys.stderr)
        return 1
    if argv[1:] == ["--write"]:
        lines = [ln for ln in without_self(LOCK.read_text().splitlines()) if not ln.startswith(MARK)]
        LOCK.write_text("\n".join([MARK + digest()] + lines) + "\n")
        return 0
    if any(line.startswith(SELF) for line in LOCK.read_text().splitlines()):
        print(f"error: {LOCK.relative_to(REPO)} names kernelkb itself (a path on the machine that compiled it); "
              "refresh it with `bash scripts/lock.sh`", file=sys.stderr)
        return 1
    if recorded() != digest():
        print(f"error: {LOCK.relative_to(REPO)} is stale: the dependency lists in pyproject.toml or "
              "constraints.txt changed since it was compiled. Refresh it with `bash scripts/lock.sh` "
              "and commit both files.", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
