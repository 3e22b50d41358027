"""The conv library kernel: each spec through the harness (tiny sizes), and every convolution form called
directly against PyTorch in the Triton interpreter.

Usage: .venv/bin/python -m pytest -x -q tests/corpus/kernels/test_conv.py

The direct cases cover each form (stride, padding, dilation, groups, transposed with and without output
padding, 1-D/2-D/3-D) at odd sizes that leave partial tiles of output pixels, channels and K, through both K
walks; the weight cache is checked against an in-place weight update.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from tests.corpus.kernels.library_check import family_kernel, family_tests, set_tunables

FAMILY = Path(__file__).resolve().parents[3] / "corpus" / "kernels" / "conv"
SPECS = sorted((FAMILY / "specs").glob("*.py"))
test_kernel_passes_spec, test_sidecar_matches_kernel = family_tests("conv")


def test_specs_cover_every_form():
    names = " ".join(s.stem for s in SPECS)
    for form in ("conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
                 "groups", "cin3"):
        assert form in names, form


def _reference(x, w, b, stride, padding, dilation, groups, transposed, output_padding):
    nd = x.dim() - 2
    if transposed:
        f = (F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d)[nd - 1]
        return f(x, w, b, stride, padding, output_padding, groups, dilation)
    return (F.conv1d, F.conv2d, F.conv3d)[nd - 1](x, w, b, stride, padding, dilation, groups)


# (dims, transposed, batch, cin, cout, spatial, kernel, stride, padding, dilation, groups, output_padding)
CASES = [
    (2, False, 2, 16, 20, (9, 11), 3, 1, 1, 1, 1, 0),  # padding 1, Cout 20: a partial channel tile
    (2, False, 1, 3, 8, (13, 10), 5, 2, 2, 1, 1, 0),  # 3 input channels, stride 2: 7x5 outputs
    (2, False, 2, 32, 32, (7, 9), (3, 2), (2, 1), (1, 0), (2, 1), 2, 0),  # per-dim values, 2 groups
    (1, False, 2, 16, 24, (37,), 3, 3, 0, 4, 1, 0),  # 1-D stride 3 dilation 4
    (3, False, 1, 3, 16, (5, 6, 7), 3, 1, 0, 1, 1, 0),  # 3-D, 3 channels
    (3, False, 1, 8, 16, (4, 5, 6), (1, 3, 2), 1, (0, 1, 1), 1, 2, 0),  # 3-D asymmetric kernel, groups
    (2, True, 2, 16, 24, (6, 7), 3, 2, 1, 1, 1, 1),  # stride 2: 4 phases, output padding 1
    (2, True, 1, 16, 16, (5, 5), 4, 2, 1, 1, 1, 0),  # kernel 4 stride 2: 2 taps a phase a dim
    (2, True, 1, 16, 16, (5, 6), 3, 1, 0, 1, 1, 0),  # stride 1: one phase, the kernel flipped
    (1, True, 2, 16, 32, (11,), 3, 2, 1, 2, 1, 0),  # dilation 2 at stride 2: odd outputs reach no tap
    (1, True, 1, 16, 16, (9,), 3, 3, 1, 2, 1, 2),  # stride 3 dilation 2: every phase has one tap
    (3, True, 1, 8, 16, (3, 4, 5), 3, 2, 1, 1, 2, 1),  # 3-D transposed, 8 phases, 2 groups
    (2, True, 1, 32, 16, (4, 5), (3, 5), (3, 2), (1, 2), 1, 4, (2, 1)),  # per-dim stride, 4 groups
]


@pytest.mark.parametrize("walk", ["taps", "flat"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}d{'t' if c[1] else ''}-cin{c[3]}-k{c[6]}-s{c[7]}")
def test_every_form_matches_torch(case, walk, monkeypatch):
    dims, transposed, nb, cin, cout, spatial, k, stride, padding, dilation, groups, op = case
    kernel = family_kernel("conv")
    set_tunables(monkeypatch, kernel, MAINLOOP=walk)
    ks = (k,) * dims if isinstance(k, int) else k
    torch.manual_seed(0)
    x = torch.randn(nb, cin, *spatial)
    w = torch.randn(cin, cout // groups, *ks) if transposed else torch.randn(cout, cin // groups, *ks)
    b = torch.randn(cout)
    got = kernel.conv(x, w, b, stride, padding, dilation, groups, transposed, op)
    want = _reference(x, w, b, stride, padding, dilation, groups, transposed, op)
    torch.testing.assert_close(got, want, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("tunables", [
    {"PACK": "kn"},  # output channels contiguous in the packed weight
    {"SPLIT_W": False},  # 3xTF32 splitting both operands in the loop
    {"SPLIT_W": False, "PACK": "kn", "MAINLOOP": "flat"},  # the same through the other K walk
    {"X_LAYOUT": "channels_last"},  # a channels-last copy of x: the mainloop reads it through its strides
    {"BLOCK_M": 64, "BLOCK_N": 16, "BLOCK_K": 16},  # more tiles than the problem: every edge partial
])
def test_strategies_match_torch(tunables, monkeypatch):
    kernel = family_kernel("conv")
    set_tunables(monkeypatch, kernel, tunables)
    torch.manual_seed(1)
    x, w, b = torch.randn(2, 24, 7, 9), torch.randn(40, 24, 3, 3), torch.randn(40)
    torch.testing.assert_close(kernel.conv(x, w, b, 2, 1), F.conv2d(x, w, b, 2, 1), atol=1e-4, rtol=1e-4)
    wt = torch.randn(24, 20, 4, 4)
    torch.testing.assert_close(kernel.conv(x, wt, None, 2, 1, transposed=True),
                               F.conv_transpose2d(x, wt, None, 2, 1), atol=1e-4, rtol=1e-4)


def test_packed_weight_follows_an_in_place_update():
    kernel = family_kernel("conv")
    torch.manual_seed(2)
    x, w = torch.randn(1, 16, 6, 6), torch.randn(16, 16, 3, 3)
    first = kernel.conv(x, w)
    torch.testing.assert_close(first, F.conv2d(x, w), atol=1e-4, rtol=1e-4)
    held = w._kkb_conv_packed[1]
    t = kernel.TUNABLES
    assert kernel.conv_packed_weight(w, False, 1, t["PACK"], t["SPLIT_W"]) is held  # unchanged: reused
    with torch.no_grad():
        w.mul_(-2.0)  # bumps the version: the next call repacks
    torch.testing.assert_close(kernel.conv(x, w), F.conv2d(x, w), atol=1e-4, rtol=1e-4)
    assert w._kkb_conv_packed[1] is not held


@pytest.mark.parametrize("bad, match", [
    ({"padding": "same"}, "padding='same' is not served"),
    ({"groups": 3}, "groups=3"),
])
def test_bad_arguments_are_named(bad, match):
    kernel = family_kernel("conv")
    x, w = torch.randn(1, 16, 6, 6), torch.randn(16, 16, 3, 3)
    with pytest.raises((ValueError, TypeError), match=match):
        kernel.conv(x, w, **bad)
