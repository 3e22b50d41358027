"""Results files that git holds: benchmarks/results/ keeps the latest run of each benchmark, and text cites an
earlier run as its name plus the commit that holds it (`sweep-20261130T131458Z.json` in commit 8bfc09a7e),
readable with `git show COMMIT:benchmarks/results/NAME`.

A citation may name several runs with a pattern, braces and globs
(`library-h200-bn-finish{1..5}-20261201T19*.json` in commit 809bbb222: at least one file of the commit must
match). A results file in the tree needs no commit.

Usage:
    python3 scripts/results_history.py NAME [NAME ...]   (prints each name with the commit to cite)
    python3 scripts/results_history.py --check FILE ...  (each cited results file that does not resolve)
"""

from __future__ import annotations

import fnmatch
import re
import subprocess
import sys
from dataclasses import dataclass
from functools import cache
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
    """The newest commit whose tree holds the file as it was last committed (short hash). HistoryError where
    git has no commit of it, or where the file in the tree differs from that commit."""
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


STAMP = re.compile(r"\d{8}T")  # a results file's UTC stamp, 20261130T131458Z, begins so
NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.{},*/-")
# "in commit H" right after a name, maybe wrapped across lines of a comment
CITED_COMMIT = re.compile(r"\A[^`]{0,12}?\bin\s+(?:#\s*)?commit\s+(?:#\s*)?([0-9a-f]{7,40})\b")
GLOB = re.compile(r"[*?{\[]")


@dataclass(frozen=True)
class Citation:
    """A results file named in text: its name (a path under benchmarks/results/, maybe a pattern), where the
    name ends in the text, and the commit cited right after it ("NAME in commit H"), if any."""

    name: str
    end: int
    commit: str | None


def citations(text: str) -> list[Citation]:
    """Every name in `text` that carries a results file's stamp (`-YYYYMMDDT`), with the commit cited after
    it. Names side by side (`a.json`, `b.json` in commit H) share the commit cited after the last of them."""
    found = []
    for m in STAMP.finditer(text):
        start, end = m.start(), m.end()
        if start and text[start - 1] != "-" or (found and start < found[-1][2]):
            continue
        while start > 0 and text[start - 1] in NAME_CHARS:
            start -= 1
        while end < len(text) and text[end] in NAME_CHARS:
            end += 1
        while end > m.end() and text[end - 1] in ".,-/":  # the sentence's stop, not the name's
            end -= 1
        raw = text[start:end].lstrip(",.")
        if "/" in raw.split(f"{RESULTS}/", 1)[-1].removeprefix("logs/"):
            continue  # a file elsewhere (a command's --out /tmp/...), or a pattern of several folders
        found.append((raw.split(f"{RESULTS}/", 1)[-1], start, end))
    out: list[Citation] = []
    pending: list[tuple[str, int]] = []
    for i, (name, _, end) in enumerate(found):
        after = text[end + (text[end:end + 1] == "`"):]
        cited = CITED_COMMIT.match(after)
        pending.append((name, end))
        between = text[end:found[i + 1][1]] if i + 1 < len(found) else None
        side_by_side = between is not None and re.fullmatch(r"`?(,| and|;)? ?`?", between)
        if cited or not side_by_side:
            out += [Citation(n, e, cited.group(1) if cited else None) for n, e in pending]
            pending = []
    return out


def _candidates(name: str) -> list[str]:
    if Path(name).suffix in (".json", ".log", ".txt", ".gz"):
        return [name]
    return [name + ext for ext in (".json", ".log", ".txt")]  # a name cited without its extension


def _expand(pattern: str) -> list[str]:
    """Brace expansion: a{1,2}b -> a1b, a2b; a{1..3}b -> a1b, a2b, a3b."""
    m = re.search(r"\{([^{}]*)\}", pattern)
    if not m:
        return [pattern]
    body = m.group(1)
    span = re.fullmatch(r"(\d+)\.\.(\d+)", body)
    parts = [str(k) for k in range(int(span.group(1)), int(span.group(2)) + 1)] if span else body.split(",")
    return [x for part in parts for x in _expand(pattern[:m.start()] + part + pattern[m.end():])]


@cache
def _tree(commit: str) -> tuple[str, ...]:
    listed = _git("ls-tree", "-r", "--name-only", commit, "--", RESULTS)
    if listed.returncode != 0:
        return ()
    return tuple(n.split(f"{RESULTS}/", 1)[1] for n in listed.stdout.split())


def in_tree(name: str) -> bool:
    """Whether the tree has the results file (or, for a pattern, any file it matches)."""
    if GLOB.search(name):
        here = [str(p.relative_to(REPO / RESULTS)) for p in (REPO / RESULTS).rglob("*") if p.is_file()]
        return any(fnmatch.filter(here, pat) for pat in _expand(name))
    return any((REPO / RESULTS / n).is_file() for n in _candidates(name))


def held(name: str, commit: str) -> bool:
    """Whether the commit holds the results file (for a pattern: at least one file it matches)."""
    if GLOB.search(name):
        return any(fnmatch.filter(_tree(commit), pat) for pat in _expand(name))
    return any(holds(commit, n) for n in _candidates(name))


def unresolved(text: str) -> list[str]:
    """Why each results file the text names does not resolve: neither in the tree nor in the commit cited."""
    reasons = []
    for c in citations(text):
        if in_tree(c.name):
            continue
        if c.commit is None:
            reasons.append(f"{c.name}: not in benchmarks/results/ and no commit cited (NAME in commit H)")
        elif not held(c.name, c.commit):
            reasons.append(f"{c.name}: commit {c.commit} does not hold it")
    return reasons


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    if argv[0] == "--check":
        bad = [f"{f}: {why}" for f in argv[1:] for why in unresolved(Path(f).read_text())]
        print("\n".join(bad) or "every cited results file resolves", file=sys.stderr if bad else sys.stdout)
        return 1 if bad else 0
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
