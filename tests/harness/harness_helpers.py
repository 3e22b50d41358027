"""Paths and candidate sources shared by the harness tests (a plain module: several test folders
have a conftest.py, and `from conftest import` would pick whichever was imported first)."""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent
SPECS = HERE / "specs"
CANDIDATES = HERE / "candidates"
REPO = HERE.parents[1]


def candidate(name: str) -> str:
    return (CANDIDATES / f"{name}.py").read_text()
