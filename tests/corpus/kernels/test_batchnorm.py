"""The batchnorm library kernel against each of its specs (tiny sizes), judged by the harness on CPU.

Usage: .venv/bin/python -m pytest -x -q tests/corpus/kernels/test_batchnorm.py

Each spec is evaluated as a copy with SIZE = "tiny" on every variant (the Triton interpreter runs ~1 ms
per program). Also: running statistics and num_batches_tracked follow nn.BatchNorm2d in training
(default and coop paths, each COOP_SYNC: the last arriver updates them).
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


@pytest.mark.parametrize("overrides", [
    {},
    {"STRATEGY": "coop", "COOP_PREFETCH": 1, "COOP_CHUNK": 128, "COOP_PROGRAMS_PER_SM": 2, "num_warps_coop": 4},
    {"STRATEGY": "coop", "COOP_SYNC": "tagged", "COOP_PREFETCH": 2, "COOP_CHUNK": 256, "num_warps_coop": 4},
    {"STRATEGY": "coop", "COOP_SYNC": "last", "COOP_PREFETCH": 1, "COOP_CHUNK": 128, "num_warps_coop": 4},
    {"STRATEGY": "coop", "COOP_SYNC": "last", "COOP_PREFETCH": 2, "COOP_CHUNK": 512, "num_warps_coop": 4},
], ids=["default", "coop_prefetch", "coop_tagged_prefetch_early", "coop_last_prefetch", "coop_last_one_chunk"])
def test_running_stats_follow_batchnorm2d(overrides: dict, monkeypatch):
    """9x7 planes: the coop chunks cut planes (runs of 64, 63 valid) and the last chunk is partial."""
    k = kernel()
    for key, value in overrides.items():
        monkeypatch.setitem(k.TUNABLES, key, value)
    torch.manual_seed(3)
    ref = torch.nn.BatchNorm2d(5, momentum=0.2)
    new = k.ModelNew(5, eps=1e-5, momentum=0.2)
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

