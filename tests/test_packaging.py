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


def test_wheel_builds_without_warnings(tmp_path):
    """The wheel of the tracked files builds with no setuptools warning block and holds the run-time data."""
    import shutil
    import subprocess
    import sys
    import zipfile

    names = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True).stdout
    src = tmp_path / "src"
    for name in names.decode().split("\0"):
        if name and (REPO / name).is_file():  # a file deleted in the working tree is not built
            (src / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, src / name)
    run = subprocess.run([sys.executable, "-m", "pip", "wheel", "-v", "--no-deps", "--no-build-isolation",
                          "-w", str(tmp_path / "dist"), str(src)],
                         check=False, capture_output=True, text=True, timeout=300)
    output = run.stdout + run.stderr
    assert run.returncode == 0, output[-3000:]
    warnings = [line.strip() for line in output.splitlines() if "Warning" in line]
    assert not warnings, f"the wheel build warned: {warnings[:5]}"
    [wheel] = (tmp_path / "dist").glob("kernelkb-*.whl")
    held = set(zipfile.ZipFile(wheel).namelist())
    for needed in ("kernelkb_cli.py", "agent_client/prompts/iteration.toml", "agent_client/templates/report.html",
                   "kernelkb_corpus/accelerators/h100.yaml", "kernelkb_corpus/kernels/softmax/kernel.yaml",
                   "kernelkb_corpus/kernels/softmax/kernel.py"):
        assert needed in held, f"the wheel lacks {needed}"
    tracked_corpus = {"kernelkb_corpus/" + n[len("corpus/"):] for n in names.decode().split("\0")
                      if n.startswith("corpus/") and (REPO / n).is_file()}
    left_out = sorted(tracked_corpus - held)
    assert not left_out, f"tracked corpus files the wheel left out: {left_out[:5]}"
