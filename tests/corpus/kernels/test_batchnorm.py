"""The batchnorm library kernel against each of its specs (tiny sizes), judged by the harness on CPU.

Usage: .venv/bin/python -m pytest -x -q tests/corpus/kernels/test_batchnorm.py

Each spec is evaluated as a copy with SIZE = "tiny" on every variant (the Triton interpreter runs ~1 ms
per program). Also: running statistics and num_batches_tracked follow nn.BatchNorm2d in training.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from library_check import KERNELS, evaluate_tiny, family_specs, sidecar_reasons

from harness import Status
from harness.spec import import_file

FAMILY = "batchnorm"


@pytest.mark.parametrize("spec", family_specs(FAMILY), ids=lambda p: p.stem)
def test_kernel_passes_spec(spec: Path, tmp_path: Path):
    verdict = evaluate_tiny(FAMILY, spec, tmp_path)
    assert verdict.status is Status.passed, verdict.reasons


def test_sidecar_matches_kernel():
    assert sidecar_reasons(FAMILY) == []


def kernel():
    return import_file(KERNELS / FAMILY / "kernel.py", "test_batchnorm_kernel")


def test_running_stats_follow_batchnorm2d():
    torch.manual_seed(3)
    ref = torch.nn.BatchNorm2d(5, momentum=0.2)
    new = kernel().ModelNew(5, eps=1e-5, momentum=0.2)
    new.weight.data.copy_(torch.randn(5))
    new.bias.data.copy_(torch.randn(5))
    ref.weight.data.copy_(new.weight.data)
    ref.bias.data.copy_(new.bias.data)
    ref.train()
    for _ in range(2):
        x = torch.randn(6, 5, 9, 7) * 3.0 + 2.0
        with torch.no_grad():
            torch.testing.assert_close(new(x), ref(x), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(new.running_mean, ref.running_mean, atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(new.running_var, ref.running_var, atol=1e-6, rtol=1e-5)
    assert int(new.num_batches_tracked) == int(ref.num_batches_tracked) == 2

