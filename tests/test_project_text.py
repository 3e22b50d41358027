"""Tracked text speaks of the project, not of how it was built: no numbered work periods, no tools or roles of
the build, no machine nicknames ("a CUDA machine"), no links outside the repository.

Usage: .venv/bin/python -m pytest -q tests/test_project_text.py
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from scripts import results_history

REPO = Path(__file__).resolve().parents[1]
# (written with [ ] and [.] so that this file does not hold the words it looks for)
BUILD_WORDS = re.compile(
    r"\bsessions?[ -]\d+\b|\bdevice[ ]tool\b|\bGPU[ ]box\b|\bH200[ ]box\b|\bteam[ ]brief\b|[.][.]/shared/"
    r"|\bthe[ ]lead(?:'s)?\b|\bno[ ]GPU[ ]time[ ]was[ ]left\b",
    re.IGNORECASE)
BOX, SHARED = "GPU" + " box", ".." + "/shared/"
# Lines in files whose owners change them in their own work; empty this as they land.
KNOWN: set[tuple[str, str]] = set()


def _tracked_text() -> list[Path]:
    names = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout.split()
    return [REPO / n for n in names if not n.startswith("benchmarks/results/") and not n.endswith((".pdf", ".png"))]


def _texts() -> list[tuple[Path, str]]:
    """Each tracked text file with its text (binary and deleted files left out)."""
    out = []
    for path in _tracked_text():
        try:
            out.append((path, path.read_text(encoding="utf-8")))
        except (UnicodeDecodeError, FileNotFoundError):
            continue
    return out


def _hits(text: str) -> list[tuple[int, str]]:
    return [(i, m.group(0)) for i, line in enumerate(text.splitlines(), 1) for m in BUILD_WORDS.finditer(line)]


def test_the_words_are_caught():
    assert BUILD_WORDS.search("as measured in session" + " 18") and BUILD_WORDS.search(f"see {SHARED}ARCHITECTURE.md")
    assert BUILD_WORDS.search(f"on the {BOX}") and not BUILD_WORDS.search("a tuning session's nodes")
    assert BUILD_WORDS.search("by the session" + "-7 counters") and BUILD_WORDS.search("as the " + "lead asked")
    assert not BUILD_WORDS.search("the leading dimension") and not BUILD_WORDS.search("sessions/relu-one")


@pytest.mark.skipif(not (REPO / ".git").exists(), reason="needs the git checkout")
def test_tracked_text_has_no_build_words():
    found = [f"{p.relative_to(REPO)}:{line}: {word}" for p, text in _texts() for line, word in _hits(text)
             if (str(p.relative_to(REPO)), word) not in KNOWN]
    assert not found, "words about how the project was built:\n" + "\n".join(found[:20])


# benchmarks/results/ keeps the latest run of each benchmark; text cites an earlier one as its name plus the
# commit that holds it (scripts/results_history.py reads the citations).
RESULTS_PATH = re.compile(r"benchmarks/results/[A-Za-z0-9_./-]*")
PLACEHOLDER = re.compile(r"\.\.\.|\b[A-Z]{1,8}\b")  # benchmarks/results/FILE, sweep-X.json, library-...json


@pytest.mark.skipif(not (REPO / ".git").exists(), reason="needs the git checkout")
def test_every_results_path_named_in_the_text_exists():
    """A plain path under benchmarks/results/ names a file or folder there now (patterns, placeholders such as
    `sweep-<UTC>.json` or FILE, ignored caches and stamped names, which the next test reads, aside)."""
    missing = []
    for p, text in _texts():
        for m in RESULTS_PATH.finditer(text):
            path, after = m.group(0), text[m.end():m.end() + 1]
            if after in tuple("*<{$") or PLACEHOLDER.search(path) or results_history.STAMP.search(path):
                continue
            path = path.rstrip(".")
            if (REPO / path).exists():
                continue
            inside = path.rstrip("/") + "/x"  # a folder git ignores (a cache) matches only as a folder
            ignored = subprocess.run(["git", "check-ignore", "-q", inside], cwd=REPO, check=False)
            if ignored.returncode != 0:
                missing.append(f"{p.relative_to(REPO)}: {path}")
    assert not missing, "paths under benchmarks/results/ that are not there:\n" + "\n".join(missing[:20])


@pytest.mark.skipif(not results_history.has_history(), reason="needs the git checkout")
def test_every_cited_results_file_is_in_the_tree_or_in_the_commit_cited():
    """Every results file the text names is under benchmarks/results/ or cited with a commit that holds it
    (`NAME` in commit H). Tests name made-up results files for their fixtures: there only a cited commit is
    checked."""
    bad = []
    for p, text in _texts():
        fixtures = p.is_relative_to(REPO / "tests")
        bad += [f"{p.relative_to(REPO)}: {why}" for why in results_history.unresolved(text)
                if not (fixtures and "no commit cited" in why)]
    assert not bad, "results files cited that do not resolve:\n" + "\n".join(bad[:20])
