"""The Gluon batch-norm probe (x held in shared memory) against float32 torch on a Hopper GPU: outputs and running
statistics, with partial stages, one-plane shares and shares that meet two channels. Skipped without an sm_90 GPU;
its run on the H200 is logged under benchmarks/results/logs/."""

from __future__ import annotations

import pytest
import torch

from tests.benchmarks.hopper_probe import HOPPER_ONLY, load_probe

pytestmark = HOPPER_ONLY


@pytest.mark.parametrize("shape", [(3, 5, 8, 8), (2, 3, 64, 64), (300, 7, 32, 32)])
@pytest.mark.parametrize("config", [{"Q": 3, "NBUF": 2, "PER_SM": 4}, {"Q": 2, "NBUF": 3, "PER_SM": 4},
                                    {"Q": 3, "PER_SM": 4, "STATIC": False}])
def test_held_batch_norm_matches_float32(shape: tuple, config: dict):
    probe = load_probe("gluon_batchnorm_probe")
    torch.manual_seed(0)
    x = torch.randn(shape, device="cuda", dtype=torch.bfloat16) * 2.0 + 1.0
    c = shape[1]
    w, b = torch.randn(c, device="cuda"), torch.randn(c, device="cuda")
    rm, rv, nbt = torch.zeros(c, device="cuda"), torch.ones(c, device="cuda"), torch.zeros((), dtype=torch.long,
                                                                                           device="cuda")
    ref_rm, ref_rv = torch.zeros(c, device="cuda"), torch.ones(c, device="cuda")
    expected = torch.nn.functional.batch_norm(x.float(), ref_rm, ref_rv, w, b, training=True, momentum=0.1, eps=1e-5)
    y = probe.held_batch_norm(x, w, b, rm, rv, nbt, 0.1, 1e-5, **config)
    torch.testing.assert_close(y.float(), expected, atol=2e-2, rtol=2e-2)
    torch.testing.assert_close(rm, ref_rm, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(rv, ref_rv, atol=1e-5, rtol=1e-5)
    assert int(nbt) == 1
    y2 = probe.held_batch_norm(x, w, b, rm, rv, nbt, 0.1, 1e-5, **config)  # a second launch (the other parity)
    torch.testing.assert_close(y2, y, atol=0, rtol=0)
    assert int(nbt) == 2
