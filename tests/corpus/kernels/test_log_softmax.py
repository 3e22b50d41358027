"""The log_softmax library kernel against each of its specs (tiny sizes), judged by the harness on CPU.

Usage: .venv/bin/python -m pytest -x -q tests/corpus/kernels/test_log_softmax.py

Each spec is evaluated as a copy with SIZE = "tiny" on every variant (the Triton interpreter runs ~1 ms
per program). Also: extreme logits stay finite on both paths.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from library_check import KERNELS, evaluate_tiny, family_specs, sidecar_reasons

from harness import Status
from harness.spec import import_file

FAMILY = "log_softmax"


@pytest.mark.parametrize("spec", family_specs(FAMILY), ids=lambda p: p.stem)
def test_kernel_passes_spec(spec: Path, tmp_path: Path):
    verdict = evaluate_tiny(FAMILY, spec, tmp_path)
    assert verdict.status is Status.passed, verdict.reasons


def test_sidecar_matches_kernel():
    assert sidecar_reasons(FAMILY) == []


def kernel():
    return import_file(KERNELS / FAMILY / "kernel.py", "test_log_softmax_kernel")


@pytest.mark.parametrize("cols", [
    300,  # fused path
    20011,  # looped path, prime width
])
def test_extreme_logits_stay_finite(cols: int):
    x = torch.randn(2, cols) * 1e4  # probabilities underflow to 0; their logs must not
    out = kernel().log_softmax_rows(x)
    assert torch.isfinite(out).all()
    torch.testing.assert_close(out, torch.log_softmax(x.double(), dim=-1).float(), atol=1e-3, rtol=1e-5)
