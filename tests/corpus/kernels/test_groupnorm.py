"""The groupnorm library kernel against each of its specs (tiny sizes), judged by the harness on CPU.

Usage: .venv/bin/python -m pytest -x -q tests/corpus/kernels/test_groupnorm.py

Each spec is evaluated as a copy with SIZE = "tiny" on every variant (the Triton interpreter runs ~1 ms
per program). Also: a channel count not divisible by the groups is rejected.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from library_check import KERNELS, evaluate_tiny, evaluate_tiny_with, family_specs, sidecar_reasons

from harness import Status
from harness.spec import import_file

FAMILY = "groupnorm"


@pytest.mark.parametrize("spec", family_specs(FAMILY), ids=lambda p: p.stem)
def test_kernel_passes_spec(spec: Path, tmp_path: Path):
    verdict = evaluate_tiny(FAMILY, spec, tmp_path)
    assert verdict.status is Status.passed, verdict.reasons


def test_sidecar_matches_kernel():
    assert sidecar_reasons(FAMILY) == []


def kernel():
    return import_file(KERNELS / FAMILY / "kernel.py", "test_groupnorm_kernel")


def test_indivisible_channels_are_named():
    with pytest.raises(ValueError, match="divisible by 4"):
        kernel().group_norm(torch.randn(2, 6, 3, 3), 4, torch.ones(6), torch.zeros(6), 1e-5)

@pytest.mark.parametrize("overrides", [
    {"GROUP_STRATEGY": "coop"},  # large groups split across programs that merge partial stats
    {"GROUP_STRATEGY": "coop", "COOP_ALL": True, "COOP_CHUNK": 4096, "COOP_PROGRAMS_PER_SM": 3},  # every group split
    {"num_warps_fused": 4},  # fused path with an explicit warp count
], ids=["coop", "coop_all_small_chunks", "fused_warps"])
@pytest.mark.parametrize("spec", family_specs(FAMILY), ids=lambda p: p.stem)
def test_strategies_pass_spec(spec: Path, tmp_path: Path, overrides: dict):
    verdict = evaluate_tiny_with(FAMILY, spec, tmp_path, overrides)
    assert verdict.status is Status.passed, verdict.reasons
