"""The rmsnorm library kernel against each of its specs (tiny sizes), judged by the harness on CPU.

Usage: .venv/bin/python -m pytest -x -q tests/corpus/kernels/test_rmsnorm.py

Each spec is evaluated as a copy with SIZE = "tiny" on every variant (the Triton interpreter runs ~1 ms
per program). Also: a mismatched weight is rejected by name.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from library_check import KERNELS, evaluate_tiny, family_specs, sidecar_reasons

from harness import Status
from harness.spec import import_file

FAMILY = "rmsnorm"


@pytest.mark.parametrize("spec", family_specs(FAMILY), ids=lambda p: p.stem)
def test_kernel_passes_spec(spec: Path, tmp_path: Path):
    verdict = evaluate_tiny(FAMILY, spec, tmp_path)
    assert verdict.status is Status.passed, verdict.reasons


def test_sidecar_matches_kernel():
    assert sidecar_reasons(FAMILY) == []


def kernel():
    return import_file(KERNELS / FAMILY / "kernel.py", "test_rmsnorm_kernel")


def test_mismatched_weight_is_named():
    with pytest.raises(ValueError, match="weight"):
        kernel().rms_norm_rows(torch.randn(2, 8), torch.ones(9), 1e-6)


def test_scale_invariance():
    x, w = torch.randn(4, 300), torch.randn(300)
    k = kernel()
    torch.testing.assert_close(k.rms_norm_rows(x * 1000.0, w, 0.0), k.rms_norm_rows(x, w, 0.0), rtol=1e-5,
                               atol=1e-5)

