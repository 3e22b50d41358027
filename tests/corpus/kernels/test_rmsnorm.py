"""The rmsnorm library kernel against each of its specs (tiny sizes), judged by the harness on CPU.

Usage: .venv/bin/python -m pytest -x -q tests/corpus/kernels/test_rmsnorm.py

Each spec is evaluated as a copy with SIZE = "tiny" on every variant (the Triton interpreter runs ~1 ms
per program). Also: a mismatched weight is rejected by name.
"""

from __future__ import annotations

import pytest
import torch

from tests.corpus.kernels.library_check import (
    family_kernel,
    family_tests,
)

FAMILY = "rmsnorm"


test_kernel_passes_spec, test_sidecar_matches_kernel = family_tests(FAMILY)


def kernel():
    return family_kernel(FAMILY)


def test_mismatched_weight_is_named():
    with pytest.raises(ValueError, match="weight"):
        kernel().rms_norm_rows(torch.randn(2, 8), torch.ones(9), 1e-6)


def test_scale_invariance():
    x, w = torch.randn(4, 300), torch.randn(300)
    k = kernel()
    torch.testing.assert_close(k.rms_norm_rows(x * 1000.0, w, 0.0), k.rms_norm_rows(x, w, 0.0), rtol=1e-5,
                               atol=1e-5)


@pytest.mark.parametrize("overrides", [
    {"PAIRS": True},
    {"PAIRS": True, "PAIR_WARPS": 4, "ROWS_FUSED": 4},
    {"COLS_CONSTEXPR": True, "ROWS_FUSED": 2},
], ids=["pairs", "pairs_rows4", "cols_constexpr_rows2"])
def test_bf16_rows_match_torch(overrides: dict, monkeypatch):
    """Even widths (the pairs path: 32-bit words), a ragged last program, and an odd width and a misaligned
    row (the pairs path falls back to the fused one). Each width runs twice: the second call reuses the
    kernel compiled for it."""
    k = kernel()
    for key, value in overrides.items():
        monkeypatch.setitem(k.TUNABLES, key, value)
    torch.manual_seed(0)
    for rows, cols in [(5, 96), (3, 20), (3, 21)]:
        x = (torch.randn(rows, cols + 2) * 2.0).to(torch.bfloat16)  # an even row stride
        w = torch.randn(cols).to(torch.bfloat16)
        aligned, shifted = x[:, :cols], x[:, 1:cols + 1]  # the second starts one value (half a word) in
        assert (k._pair_words(aligned, w) is None) == (cols % 2 == 1)
        assert k._pair_words(shifted, w) is None
        for xs in (aligned, shifted, aligned):
            want = torch.nn.functional.rms_norm(xs.float(), (cols,), w.float(), 1e-6)
            got = k.rms_norm_rows(xs, w, 1e-6)
            torch.testing.assert_close(got.float(), want, atol=2e-2, rtol=2e-2)


def test_pair_warps_follow_the_row_bytes():
    """One warp per 8192 bytes, rounded up to a power of two in [1, 16]."""
    k = kernel()
    assert [k._pair_warps(1, n, 8192) for n in (96, 4096, 5120, 8192, 16384)] == [1, 1, 2, 2, 4]


@pytest.mark.parametrize("shape,dim,weighted", [
    ((3, 8, 9, 13), 1, False),  # KernelBench's RMS norm over channels: 117 inner columns, a partial last block
    ((2, 5, 300), 1, True),  # 5 channels (a padded power of two) with a weight along them
    ((4, 3, 6), 0, False),  # the first dim: 18 inner columns, one outer index
    ((6, 40), -1, False),  # the last dim goes to the row kernels, with a weight of ones
])
def test_rms_norm_over_a_dim_matches_torch(shape, dim, weighted):
    k = kernel()
    x = torch.randn(*shape) * 3.0
    n = shape[dim]
    w = torch.randn(n) if weighted else None
    along = [1] * len(shape)
    along[dim] = n
    expected = x / torch.sqrt(torch.mean(x ** 2, dim=dim, keepdim=True) + 1e-5)
    if weighted:
        expected = expected * w.reshape(along)
    torch.testing.assert_close(k.rms_norm_dim(x, w, 1e-5, dim), expected, atol=1e-5, rtol=1e-5)


def test_rms_norm_over_trailing_dims():
    k = kernel()
    x, w = torch.randn(3, 4, 5), torch.randn(4, 5)
    expected = x * torch.rsqrt(torch.mean(x ** 2, dim=(1, 2), keepdim=True) + 1e-6) * w
    torch.testing.assert_close(k.rms_norm_rows(x, w, 1e-6), expected, atol=1e-5, rtol=1e-5)
