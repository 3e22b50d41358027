"""Fixtures of the harness tests (stdlib and torch only); paths and candidate sources: harness_helpers.py."""

from __future__ import annotations

import pytest


@pytest.fixture
def cpu_config():
    from harness import EvalConfig

    return EvalConfig.for_cpu_tests()
