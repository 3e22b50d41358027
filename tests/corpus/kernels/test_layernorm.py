"""The layernorm library kernel against each of its specs (tiny sizes), judged by the harness on CPU.

Usage: .venv/bin/python -m pytest -x -q tests/corpus/kernels/test_layernorm.py

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

FAMILY = "layernorm"


@pytest.mark.parametrize("spec", family_specs(FAMILY), ids=lambda p: p.stem)
def test_kernel_passes_spec(spec: Path, tmp_path: Path):
    verdict = evaluate_tiny(FAMILY, spec, tmp_path)
    assert verdict.status is Status.passed, verdict.reasons


def test_sidecar_matches_kernel():
    assert sidecar_reasons(FAMILY) == []


def kernel():
    return import_file(KERNELS / FAMILY / "kernel.py", "test_layernorm_kernel")


def test_mismatched_weight_is_named():
    with pytest.raises(ValueError, match="weight"):
        kernel().layer_norm_rows(torch.randn(2, 8), torch.ones(7), torch.zeros(7), 1e-5)


def test_constant_rows_give_the_bias():
    x = torch.full((3, 50), 7.0)  # zero variance: rsqrt(eps), centred values are exactly 0
    w, b = torch.randn(50), torch.randn(50)
    torch.testing.assert_close(kernel().layer_norm_rows(x, w, b, 1e-5), b.expand(3, 50))

