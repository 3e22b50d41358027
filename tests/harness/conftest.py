"""Fixtures of the harness tests: paths of the test specs and candidates (stdlib and torch only)."""

from __future__ import annotations

from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
SPECS = HERE / "specs"
CANDIDATES = HERE / "candidates"
REPO = HERE.parents[1]


def candidate(name: str) -> str:
    return (CANDIDATES / f"{name}.py").read_text()


@pytest.fixture
def cpu_config():
    from harness import EvalConfig

    return EvalConfig.for_cpu_tests()
