"""What the wheel holds: every package of ours, the files they read at run time, and the corpus.

Usage: .venv/bin/python -m pytest -q tests/test_packaging.py
(scripts/wheel_smoke.sh builds and installs the wheel itself; these checks are the fast part.)
"""

from __future__ import annotations

import fnmatch
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OURS = ("agent_client", "harness", "ingest", "kb_server")
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]


def _package_dirs() -> set[str]:
    return {str(init.parent.relative_to(REPO)).replace("/", ".") for top in OURS
            for init in (REPO / top).rglob("__init__.py") if "__pycache__" not in init.parts}


def _matches(relative: str, patterns: list[str]) -> bool:
    # setuptools' globs: "**/" also matches no folder at all
    return any(fnmatch.fnmatch(relative, p) or fnmatch.fnmatch(relative, p.replace("**/", "", 1)) for p in patterns)


def test_every_package_is_listed():
    listed = set(PYPROJECT["packages"])
    missing = _package_dirs() - listed
    assert not missing, f"add {sorted(missing)} to [tool.setuptools] packages in pyproject.toml"
    stale = listed - _package_dirs() - {"kernelkb_corpus"}
    assert not stale, f"pyproject.toml lists packages that do not exist: {sorted(stale)}"


def test_run_time_files_are_package_data():
    data = PYPROJECT["package-data"]
    for top in OURS:
        for path in (REPO / top).rglob("*"):
            if path.is_dir() or path.suffix in (".py", ".pyc") or path.name == "README.md":
                continue
            relative = str(path.relative_to(REPO / top))
            assert _matches(relative, data.get(top, [])), f"{top}/{relative} would not ship in the wheel"


def test_corpus_ships_whole():
    assert PYPROJECT["package-dir"]["kernelkb_corpus"] == "corpus"
    patterns = PYPROJECT["package-data"]["kernelkb_corpus"]
    corpus = REPO / "corpus"
    files = [p for p in corpus.rglob("*") if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"]
    assert len(files) > 100
    left_out = [str(p.relative_to(corpus)) for p in files
                if p.name != "__init__.py" and not _matches(str(p.relative_to(corpus)), patterns)]
    assert not left_out, f"corpus files the wheel would leave out: {left_out[:5]}"


def test_bundled_corpus_resolves_from_the_package():
    from kb_server.config import KBSettings, bundled_corpus_dir

    corpus = bundled_corpus_dir()
    assert (corpus / "accelerators" / "h100.yaml").is_file()
    assert (corpus / "kernels" / "softmax" / "kernel.yaml").is_file()
    assert KBSettings(model="unused").corpus_dir == corpus
