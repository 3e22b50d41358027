"""The cumsum library kernel against each of its specs (tiny sizes), judged by the harness on CPU.

Usage: .venv/bin/python -m pytest -x -q tests/corpus/kernels/test_cumsum.py

Each spec is evaluated as a copy with SIZE = "tiny" on every variant (the Triton interpreter runs ~1 ms
per program). Also: a scan over a non-last dimension of a 3-d tensor.
"""

from __future__ import annotations

import pytest
import torch

from tests.corpus.kernels.library_check import family_kernel, family_tests, set_tunables

FAMILY = "cumsum"


test_kernel_passes_spec, test_sidecar_matches_kernel = family_tests(FAMILY)


def test_compensated_carry_is_near_exact(monkeypatch):
    # a long row with a large running total (~6e4): within two fp32 ulps of the exact prefix sum plus the
    # in-chunk scan's own rounding (~1e-4 for 512-wide chunks)
    x = torch.randn(2, 20000) + 3.0
    k = kernel()
    set_tunables(monkeypatch, k, FP64_ACC=2, BLOCK=512)
    exact = torch.cumsum(x.double(), dim=1)
    err = (k.cumsum(x, 1).double() - exact).abs()
    assert (err <= exact.abs() * 2.0**-22 + 1e-3).all(), err.max().item()


def kernel():
    return family_kernel(FAMILY)


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_any_dimension(dim: int):
    x = torch.randn(4, 33, 5)
    torch.testing.assert_close(kernel().cumsum(x, dim), torch.cumsum(x, dim=dim), atol=1e-5, rtol=1e-5)
