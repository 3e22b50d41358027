"""The reduction library kernel against each of its specs (tiny sizes), judged by the harness on CPU.

Usage: .venv/bin/python -m pytest -x -q tests/corpus/kernels/test_reduction.py

Each spec is evaluated as a copy with SIZE = "tiny" on every variant (the Triton interpreter runs ~1 ms
per program). Also: every op over every dimension of a 3-d tensor, and unknown ops by name.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from library_check import KERNELS, evaluate_tiny, family_specs, sidecar_reasons

from harness import Status
from harness.spec import import_file

FAMILY = "reduction"


@pytest.mark.parametrize("spec", family_specs(FAMILY), ids=lambda p: p.stem)
def test_kernel_passes_spec(spec: Path, tmp_path: Path):
    verdict = evaluate_tiny(FAMILY, spec, tmp_path)
    assert verdict.status is Status.passed, verdict.reasons



def test_sidecar_matches_kernel():
    assert sidecar_reasons(FAMILY) == []


def kernel():
    return import_file(KERNELS / FAMILY / "kernel.py", "test_reduction_kernel")


@pytest.mark.parametrize("op", ["sum", "mean", "max", "min", "argmax", "argmin"])
@pytest.mark.parametrize("dim", [0, 1, 2])  # outer==1 middle path, middle path, last-dim path
def test_every_op_and_dim(op: str, dim: int):
    x = torch.randn(5, 6, 70)
    ref = getattr(torch, op)(x, dim=dim)
    ref = ref.values if op in ("max", "min") else ref
    out = kernel().reduce_dim(x, op, dim)
    assert out.dtype == ref.dtype and out.shape == ref.shape
    torch.testing.assert_close(out, ref, atol=1e-5, rtol=1e-5)


def test_unknown_op_is_named():
    with pytest.raises(ValueError, match="'median'"):
        kernel().reduce_dim(torch.randn(3, 4), "median", 1)
