"""The Gluon batch-norm ring probe (each program's tiles held in a shared-memory ring between statistics and apply)
against float32 torch on a Hopper GPU: outputs, running statistics and a second launch (the other parity), with
ragged planes, a raised lag and shares of several tiles. Skipped without an sm_90 GPU; its run on the H200 is logged
under benchmarks/results/logs/."""

from __future__ import annotations

import pytest
import torch

from tests.benchmarks.hopper_probe import HOPPER_ONLY, load_probe

pytestmark = HOPPER_ONLY


@pytest.mark.parametrize(("shape", "dtype", "tol"), [((3, 5, 8, 8), torch.bfloat16, 2e-2),
                                                     ((6, 5, 9, 7), torch.float32, 1e-5),
                                                     ((300, 7, 32, 32), torch.float32, 1e-4)], ids=str)
@pytest.mark.parametrize("config", [{}, {"SHARE": 3, "EVICT_R": "evict_last"}, {"PER_SM": 5, "LAG": 3}])
def test_ring_batch_norm_matches_float32(shape: tuple, dtype: torch.dtype, tol: float, config: dict):
    probe = load_probe("gluon_batchnorm_ring_probe")
    torch.manual_seed(0)
    x = (torch.randn(shape, device="cuda") * 2.0 + 1.0).to(dtype)
    c = shape[1]
    w, b = torch.randn(c, device="cuda"), torch.randn(c, device="cuda")
    rm, rv, nbt = torch.zeros(c, device="cuda"), torch.ones(c, device="cuda"), torch.zeros((), dtype=torch.long,
                                                                                           device="cuda")
    ref_rm, ref_rv = torch.zeros(c, device="cuda"), torch.ones(c, device="cuda")
    expected = torch.nn.functional.batch_norm(x.float(), ref_rm, ref_rv, w, b, training=True, momentum=0.1, eps=1e-5)
    y = probe.ring_batch_norm(x, w, b, rm, rv, nbt, 0.1, 1e-5, **config)
    torch.testing.assert_close(y.float(), expected, atol=tol, rtol=tol)
    torch.testing.assert_close(rm, ref_rm, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(rv, ref_rv, atol=1e-5, rtol=1e-5)
    assert int(nbt) == 1
    y2 = probe.ring_batch_norm(x, w, b, rm, rv, nbt, 0.1, 1e-5, **config)  # a second launch (the other parity)
    torch.testing.assert_close(y2, y, atol=0, rtol=0)
    assert int(nbt) == 2
