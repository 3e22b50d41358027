"""Helpers of the lowering's launch tests: a lowered candidate as a module, a kernel that must not launch."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path


def load_candidate(source: str, tmp_path: Path, name: str):
    """The candidate's source imported from a file (@triton.jit reads its function's source there)."""
    path = tmp_path / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


class Forbidden:
    """Stands in for a kernel that must not be launched: indexing it by a grid fails the test."""

    def __init__(self, name: str):
        self.name = name

    def __getitem__(self, grid):
        raise AssertionError(f"{self.name} was launched")
