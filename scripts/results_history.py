"""Results files that git holds: benchmarks/results/ keeps the latest run of each benchmark, and text cites an
earlier run as its name plus the commit that holds it (`sweep-20261130T131458Z.json` in commit 1a2b3c4d5),
readable with `git show COMMIT:benchmarks/results/NAME`.

Usage: python3 scripts/results_history.py NAME [NAME ...]   (prints each name with the commit to cite)
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RESULTS = "benchmarks/results"
ABBREV = 9  # hex digits of a cited commit: short to read, long enough to stay unambiguous


class HistoryError(RuntimeError):
    """A results file git cannot place: not committed, changed since its last commit, or no repository."""


def _git(*args: str) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, check=False)
    except OSError as exc:  # no git on this machine
        raise HistoryError(f"results_history: git cannot run here ({exc})") from exc


def has_history() -> bool:
    """Whether this checkout is a git repository (a wheel or an exported tree is not)."""
    return (REPO / ".git").exists() and _git("rev-parse", "--git-dir").returncode == 0


def results_path(name: str) -> str:
    """A results file's path in the repository: NAME, logs/NAME or benchmarks/results/... as given."""
    return name if name.startswith(RESULTS + "/") else f"{RESULTS}/{name}"


def commit_holding(name: str) -> str:
    """The newest commit whose tree holds the file as it was last committed (short hash). HistoryError where git
    has no commit of it, or where the file in the tree differs from that commit."""
    path = results_path(name)
    found = _git("log", "-1", f"--abbrev={ABBREV}", "--format=%h", "--diff-filter=AM", "--", path)
    if found.returncode != 0 or not found.stdout.strip():
        raise HistoryError(f"results_history: {path} is in no commit; commit it first so it can be cited")
    if (REPO / path).is_file() and _git("diff", "--quiet", "HEAD", "--", path).returncode != 0:
        raise HistoryError(f"results_history: {path} differs from its last commit; commit it first")
    return found.stdout.strip()


def head_commit() -> str | None:
    """The commit checked out (short hash), or None outside a repository."""
    found = _git("rev-parse", f"--short={ABBREV}", "HEAD")
    return found.stdout.strip() if found.returncode == 0 else None


def holds(commit: str, name: str) -> bool:
    """Whether `commit` holds the results file `name`."""
    return _git("cat-file", "-e", f"{commit}:{results_path(name)}").returncode == 0


def read(name: str, commit: str | None = None) -> str:
    """The file's text: from the tree where it is there and no commit is named, else from the commit."""
    path = results_path(name)
    if commit is None:
        if (REPO / path).is_file():
            return (REPO / path).read_text()
        raise HistoryError(f"results_history: {path} is not in the tree and no commit is named")
    shown = _git("show", f"{commit}:{path}")
    if shown.returncode != 0:
        raise HistoryError(f"results_history: commit {commit} does not hold {path} ({shown.stderr.strip()})")
    return shown.stdout


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    status = 0
    for name in argv:
        try:
            print(f"`{Path(name).name}` in commit {commit_holding(name)}")
        except HistoryError as exc:
            print(exc, file=sys.stderr)
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
