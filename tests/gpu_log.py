"""Provenance of a test run, for the GPU logs: the command, the commit, a digest of the source, the versions.

Usage: python3 -m tests.gpu_log              (prints the provenance block for this checkout and machine)
       python3 -m tests.gpu_log --digest     (only the source digest: run it at a commit to match a log to it)

A copy of the working tree may lack .git, so the commit comes from `git` where there is one,
else from KKB_COMMIT (benchmarks/gpu/tests.sh passes it on), else it is "unknown"; the source digest is
computed the same way everywhere (a walk of the code folders, generated files left out), so a log can always
be matched to the tree it ran on. tests/conftest.py prints this block at the end of any pytest run that ran
GPU tests on a GPU; benchmarks/gpu/tests.sh writes it at the top of each log it keeps.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import platform
import shlex
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CODE = ("harness", "corpus/kernels", "tests", "agent_client", "kb_server", "ingest", "benchmarks", "examples",
        "scripts")
TOP_FILES = ("pyproject.toml", "kernelkb_cli.py", "constraints.txt")
SUFFIXES = (".py", ".yaml", ".yml", ".toml", ".sh", ".txt")
SKIP_DIRS = {"__pycache__", ".pytest_cache", ".ruff_cache", ".hypothesis", ".schemathesis", ".cache",
             "results"}


def source_files(root: Path = REPO) -> list[Path]:
    files = [root / name for name in TOP_FILES if (root / name).is_file()]
    for folder in CODE:
        for dirpath, dirnames, filenames in os.walk(root / folder):
            dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.endswith(".egg-info"))
            files += [Path(dirpath) / f for f in filenames if f.endswith(SUFFIXES)]
    return sorted(files)


def source_digest(root: Path = REPO) -> str:
    """sha256 over (relative path, content) of every code file, first 16 hex digits."""
    h = hashlib.sha256()
    for path in source_files(root):
        h.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def commit(root: Path = REPO) -> str:
    try:
        sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True,
                             check=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                               capture_output=True, text=True, check=True, timeout=30).stdout.strip()
        return sha + (" (with uncommitted changes)" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        pass
    given = os.environ.get("KKB_COMMIT")
    return f"{given} (from KKB_COMMIT)" if given else "unknown (no git here and no KKB_COMMIT)"


def versions() -> dict[str, str]:
    out = {"python": platform.python_version(), "platform": platform.platform()}
    try:
        import torch

        out["torch"] = torch.__version__
        out["cuda"] = str(torch.version.cuda)
        if torch.cuda.is_available():
            names = {torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())}
            out["gpu"] = ", ".join(sorted(names))
            major, minor = torch.cuda.get_device_capability()
            out["capability"] = f"sm_{major}{minor}"
            out["gpus"] = str(torch.cuda.device_count())
    except ImportError:
        out["torch"] = "absent"
    for name in ("triton", "numpy"):
        try:
            out[name] = __import__(name).__version__
        except ImportError:
            out[name] = "absent"
    try:
        driver = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                capture_output=True, text=True, timeout=20, check=True).stdout.split()
        out["driver"] = driver[0] if driver else "?"
    except (OSError, subprocess.SubprocessError):
        pass
    out["TRITON_INTERPRET"] = os.environ.get("TRITON_INTERPRET", "")
    return out


def provenance_lines(command: str | None = None) -> list[str]:
    command = command or os.environ.get("KKB_GPU_COMMAND") or shlex.join([sys.executable, *sys.argv])
    lines = [f"command: {command}", f"commit: {commit()}", f"source digest: {source_digest()}"]
    lines += [f"{name}: {value}" for name, value in versions().items()]
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--digest", action="store_true", help="print only the source digest")
    parser.add_argument("--command", help="the command to record (default: KKB_GPU_COMMAND, else this one)")
    args = parser.parse_args()
    print(source_digest() if args.digest else "\n".join(provenance_lines(args.command)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
