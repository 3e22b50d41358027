"""Fixtures of the harness tests (stdlib and torch only); paths and candidate sources: harness_helpers.py."""

from __future__ import annotations

import pytest


@pytest.fixture
def cpu_config():
    from harness import EvalConfig

    return EvalConfig.for_cpu_tests()


@pytest.fixture(autouse=True, scope="session")
def _baseline_cache(tmp_path_factory):
    """Baselines measured by these tests stay in a folder of their own (not the user's cache)."""
    import os

    os.environ["KKB_HARNESS_CACHE"] = str(tmp_path_factory.mktemp("harness_cache"))
    yield
