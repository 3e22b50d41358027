"""The attention probe's plain Gluon form (8 warps issuing their own loads; slower than the library's kernels,
kept for the record) against float32 SDPA on a Hopper GPU (skipped without an sm_90 GPU; the refusal of shapes
it does not cover runs anywhere); its run on the H200 is logged under benchmarks/results/logs/. The library's
warp-specialised kernel has its own GPU tests (tests/corpus/kernels/test_attention.py)."""

from __future__ import annotations

import pytest
import torch

from tests.benchmarks.hopper_probe import HOPPER_ONLY, load_probe

GPU, NEEDS_SM90 = HOPPER_ONLY


@GPU
@NEEDS_SM90
@pytest.mark.parametrize("head_dim", [64, 128])
@pytest.mark.parametrize("config", [{"BN": 128, "STAGES": 2}, {"BN": 64, "STAGES": 3}])
def test_plain_gluon_attention_matches_float32(head_dim: int, config: dict):
    probe = load_probe("gluon_attention_probe")
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 3, 512, head_dim, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    expected = torch.nn.functional.scaled_dot_product_attention(q.float(), k.float(), v.float())
    torch.testing.assert_close(probe.gluon_attention(q, k, v, **config).float(), expected, atol=2e-2, rtol=2e-2)


def test_plain_gluon_attention_names_what_it_does_not_cover():
    """Checked before anything is launched: runs on the CPU."""
    probe = load_probe("gluon_attention_probe")
    q = torch.randn(1, 1, 200, 64, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="seq % 128"):
        probe.gluon_attention(q, q, q)
