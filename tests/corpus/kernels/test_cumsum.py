"""The cumsum library kernel against each of its specs (tiny sizes), judged by the harness on CPU.

Usage: .venv/bin/python -m pytest -x -q tests/corpus/kernels/test_cumsum.py

Each spec is evaluated as a copy with SIZE = "tiny" on every variant (the Triton interpreter runs ~1 ms
per program). Also: a scan over a non-last dimension of a 3-d tensor.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from library_check import KERNELS, evaluate_tiny, family_specs, sidecar_reasons

from harness import Status
from harness.spec import import_file

FAMILY = "cumsum"


@pytest.mark.parametrize("spec", family_specs(FAMILY), ids=lambda p: p.stem)
def test_kernel_passes_spec(spec: Path, tmp_path: Path):
    verdict = evaluate_tiny(FAMILY, spec, tmp_path)
    assert verdict.status is Status.passed, verdict.reasons


def test_sidecar_matches_kernel():
    assert sidecar_reasons(FAMILY) == []


def kernel():
    return import_file(KERNELS / FAMILY / "kernel.py", "test_cumsum_kernel")


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_any_dimension(dim: int):
    x = torch.randn(4, 33, 5)
    torch.testing.assert_close(kernel().cumsum(x, dim), torch.cumsum(x, dim=dim), atol=1e-5, rtol=1e-5)
