"""The layernorm library kernel against each of its specs (tiny sizes), judged by the harness on CPU.

Usage: .venv/bin/python -m pytest -x -q tests/corpus/kernels/test_layernorm.py

Each spec is evaluated as a copy with SIZE = "tiny" on every variant (the Triton interpreter runs ~1 ms
per program). Also: a mismatched weight is rejected by name.
"""

from __future__ import annotations

import pytest
import torch

from tests.corpus.kernels.library_check import family_kernel, family_tests

FAMILY = "layernorm"


test_kernel_passes_spec, test_sidecar_matches_kernel = family_tests(FAMILY)


def kernel():
    return family_kernel(FAMILY)


def test_mismatched_weight_is_named():
    with pytest.raises(ValueError, match="weight"):
        kernel().layer_norm_rows(torch.randn(2, 8), torch.ones(7), torch.zeros(7), 1e-5)


@pytest.mark.parametrize("shape,normalized,max_fused", [
    ((3, 4, 15, 17), (4, 15, 17), 2048),  # KernelBench's layer norm over (C, H, W): fused rows of 1020
    ((2, 5, 40, 60), (40, 60), 2048),  # 10 rows of 2400 past MAX_FUSED_N: the looped path
    # 3 rows of 1020, fewer than the interpreter's 4 "SMs": each row split in 16 chunks of 64 (the last partial),
    # walked in blocks of 32
    ((3, 4, 15, 17), (4, 15, 17), 512),
])
def test_layer_norm_over_trailing_dims(shape, normalized, max_fused, monkeypatch):
    k = kernel()
    monkeypatch.setitem(k.TUNABLES, "MAX_FUSED_N", max_fused)
    monkeypatch.setitem(k.TUNABLES, "BLOCK_LOOP", 32)
    x, w, b = torch.rand(*shape), torch.randn(*normalized), torch.randn(*normalized)
    expected = torch.nn.functional.layer_norm(x, normalized, w, b, 1e-5)
    torch.testing.assert_close(k.layer_norm_rows(x, w, b, 1e-5), expected, atol=1e-5, rtol=1e-5)


def test_split_path_owns_columns_of_every_row(monkeypatch):
    """The split path's third kernel: programs of 64 columns of every row (the last partial), rows of mean 100
    and spread 3 whose chunks' statistics merge without cancellation, a row width no block divides."""
    k = kernel()
    for key, value in {"MAX_FUSED_N": 256, "BLOCK_LOOP": 32, "APPLY_BLOCK": 64}.items():
        monkeypatch.setitem(k.TUNABLES, key, value)
    torch.manual_seed(0)
    x = 100.0 + 3.0 * torch.randn(2, 3, 333)
    w, b = torch.randn(3, 333), torch.randn(3, 333)
    expected = torch.nn.functional.layer_norm(x.double(), (3, 333), w.double(), b.double(), 1e-5).float()
    torch.testing.assert_close(k.layer_norm_rows(x, w, b, 1e-5), expected, atol=2e-5, rtol=2e-5)


def test_constant_rows_give_the_bias():
    x = torch.full((3, 50), 7.0)  # zero variance: rsqrt(eps), centred values are exactly 0
    w, b = torch.randn(50), torch.randn(50)
    torch.testing.assert_close(kernel().layer_norm_rows(x, w, b, 1e-5), b.expand(3, 50))


@pytest.mark.parametrize("overrides", [
    {},
    {"PAIR_WARPS": 4, "ROWS_FUSED": 4},
    {"PAIRS": False},
    {"PAIRS": False, "COLS_CONSTEXPR": True, "ROWS_FUSED": 2},
], ids=["pairs", "pairs_rows4", "fused", "fused_cols_constexpr_rows2"])
def test_bf16_rows_match_torch(overrides: dict, monkeypatch):
    """Even widths (by default the pairs path: 32-bit words), a ragged last program, an offset far from zero
    (the centred variance), and an odd width and a misaligned row (the pairs path falls back to the fused
    one). Each width runs twice: the second call reuses the kernel compiled for it."""
    k = kernel()
    for key, value in overrides.items():
        monkeypatch.setitem(k.TUNABLES, key, value)
    torch.manual_seed(0)
    for rows, cols, offset in [(5, 96, 100.0), (3, 20, 0.0), (3, 21, 1.0)]:
        x = (torch.randn(rows, cols + 2) * 2.0 + offset).to(torch.bfloat16)  # an even row stride
        w, b = torch.randn(cols).to(torch.bfloat16), torch.randn(cols).to(torch.bfloat16)
        aligned, shifted = x[:, :cols], x[:, 1:cols + 1]  # the second starts one value (half a word) in
        assert (k._pair_words(aligned, w, b) is None) == (cols % 2 == 1)
        assert k._pair_words(shifted, w, b) is None
        for xs in (aligned, shifted, aligned):
            want = torch.nn.functional.layer_norm(xs.float(), (cols,), w.float(), b.float(), 1e-5)
            got = k.layer_norm_rows(xs, w, b, 1e-5)
            torch.testing.assert_close(got.float(), want, atol=2e-2, rtol=2e-2)


def test_pair_warps_follow_the_row_bytes():
    """One warp per 8192 bytes, rounded up to a power of two in [1, 16]: 5120 bf16 (10240 bytes) gets 2."""
    k = kernel()
    assert [k._pair_warps(1, n, 8192) for n in (96, 4096, 5120, 8192, 16384)] == [1, 1, 2, 2, 4]
    assert k._pair_warps(16, 96, 8192) == 1 and k._pair_warps(1, 16384, 2048) == 16


@pytest.mark.parametrize("rows", ["offset", "outlier_first"])
def test_reload_statistics_are_as_exact_as_the_whole_row(rows: str, monkeypatch):
    """The reload kernel's per-lane Welford statistics, summed in two trees, against the whole-row two-pass kernel
    (float64 reference): rows of mean 100 and spread 3, where one tree of pairwise merges (rounded at the mean's
    scale) came out ~10x worse than the two-pass kernel, and rows whose first value sits ~1000 spreads away
    (statistics shifted by it lose most of their precision). Within a few times the two-pass error, far inside fp32's 1e-4."""
    k = kernel()
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(3, 4096, generator=gen) * 3.0 + (100.0 if rows == "offset" else 0.0)
    if rows == "outlier_first":
        x[:, 0] = 3000.0
    w, b = torch.randn(4096, generator=gen), torch.randn(4096, generator=gen)
    ref = torch.nn.functional.layer_norm(x.double(), (4096,), w.double(), b.double(), 1e-5)
    errors = {}
    for reload in (False, True):
        monkeypatch.setitem(k.TUNABLES, "RELOAD", reload)
        errors[reload] = (k.layer_norm_rows(x, w, b, 1e-5).double() - ref).abs().max().item()
    assert errors[True] <= 4 * errors[False] + 1e-6, errors
