"""The log_softmax library kernel against each of its specs (tiny sizes), judged by the harness on CPU.

Usage: .venv/bin/python -m pytest -x -q tests/corpus/kernels/test_log_softmax.py

Each spec is evaluated as a copy with SIZE = "tiny" on every variant (the Triton interpreter runs ~1 ms
per program). Also: extreme logits stay finite on both paths.
"""

from __future__ import annotations

import pytest
import torch

from tests.corpus.kernels.library_check import family_kernel, family_tests

FAMILY = "log_softmax"


test_kernel_passes_spec, test_sidecar_matches_kernel = family_tests(FAMILY)


def kernel():
    return family_kernel(FAMILY)


@pytest.mark.parametrize("cols", [
    300,  # fused path
    20011,  # wide-row path (coop by default), prime width
])
def test_extreme_logits_stay_finite(cols: int):
    x = torch.randn(2, cols) * 1e4  # probabilities underflow to 0; their logs must not
    out = kernel().log_softmax_rows(x)
    assert torch.isfinite(out).all()
    torch.testing.assert_close(out, torch.log_softmax(x.double(), dim=-1).float(), atol=1e-3, rtol=1e-5)


def test_one_exp_online_update_matches_torch(monkeypatch):
    """The looped path's one-exp online update: rising and falling rows, large logits, a ragged last block
    (masked lanes after real ones)."""
    kernel = family_kernel(FAMILY, "test_log_softmax_one_exp")
    for key, value in {"WIDE_STRATEGY": "looped", "MAX_FUSED_N": 256, "BLOCK_LOOP": 512}.items():
        monkeypatch.setitem(kernel.TUNABLES, key, value)
    torch.manual_seed(0)
    ramp = torch.linspace(-50.0, 50.0, 1300)
    x = torch.stack([torch.randn(1300) * 60.0, ramp, ramp.flip(0), torch.full((1300,), -7.0)])
    torch.testing.assert_close(kernel.log_softmax_rows(x), torch.log_softmax(x.double(), dim=-1).float(),
                               atol=1e-5, rtol=1e-4)
