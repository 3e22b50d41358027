"""The log_softmax library kernel against each of its specs (tiny sizes), judged by the harness on CPU.

Usage: .venv/bin/python -m pytest -x -q tests/corpus/kernels/test_log_softmax.py

Each spec is evaluated as a copy with SIZE = "tiny" on every variant (the Triton interpreter runs ~1 ms
per program). Also: extreme logits stay finite on both paths.
"""

from __future__ import annotations

import pytest
import torch

from harness.spec import import_file
from tests.corpus.kernels.library_check import KERNELS, family_kernel, family_tests

FAMILY = "log_softmax"


test_kernel_passes_spec, test_sidecar_matches_kernel = family_tests(FAMILY)


def kernel():
    return family_kernel(FAMILY)


@pytest.mark.parametrize("cols", [
    300,  # fused path
    20011,  # looped path, prime width
])
def test_extreme_logits_stay_finite(cols: int):
    x = torch.randn(2, cols) * 1e4  # probabilities underflow to 0; their logs must not
    out = kernel().log_softmax_rows(x)
    assert torch.isfinite(out).all()
    torch.testing.assert_close(out, torch.log_softmax(x.double(), dim=-1).float(), atol=1e-3, rtol=1e-5)


def _shared_part(family: str) -> str:
    source = (KERNELS / family / "kernel.py").read_text()
    start = source.index("# ---- shared softmax code")
    return source[start:source.index("# ---- end of the shared softmax code ----")]


def test_kernel_code_is_softmax_kernel_code():
    # the harness evaluates a kernel as source text from a temp folder, so this file cannot import
    # softmax's; the two keep one copy of the code below TUNABLES, and this test keeps them equal
    assert _shared_part(FAMILY) == _shared_part("softmax"), "copy the shared part of softmax/kernel.py here"


def test_one_exp_online_update_matches_torch(monkeypatch):
    """ONE_EXP: rising and falling rows, large logits, a ragged last block (masked lanes after real ones)."""
    kernel = import_file(KERNELS / FAMILY / "kernel.py", "test_log_softmax_one_exp")
    for key, value in {"WIDE_STRATEGY": "looped", "ONE_EXP": True, "MAX_FUSED_N": 256, "BLOCK_LOOP": 512}.items():
        monkeypatch.setitem(kernel.TUNABLES, key, value)
    torch.manual_seed(0)
    ramp = torch.linspace(-50.0, 50.0, 1300)
    x = torch.stack([torch.randn(1300) * 60.0, ramp, ramp.flip(0), torch.full((1300,), -7.0)])
    torch.testing.assert_close(kernel.log_softmax_rows(x), torch.log_softmax(x.double(), dim=-1).float(), atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("one_exp", [True, False])
def test_aligned_looped_rows_of_every_alignment(monkeypatch, one_exp: bool):
    """ALIGN_LOOP: rows shorter than the head, shorter than one block, whole blocks with no tail, ragged."""
    kernel = import_file(KERNELS / FAMILY / "kernel.py", "test_log_softmax_aligned")
    options = {"WIDE_STRATEGY": "looped", "ALIGN_LOOP": True, "MAX_FUSED_N": 1, "BLOCK_LOOP": 64,
               "LOOP_STAGES": 2, "ONE_EXP": one_exp, "num_warps_loop": 4}
    for key, value in options.items():
        monkeypatch.setitem(kernel.TUNABLES, key, value)
    torch.manual_seed(0)
    for rows, cols in [(7, 2), (5, 67), (3, 129), (3, 64)]:
        for dtype in (torch.float32, torch.bfloat16):  # 4 and 8 elements to a 16-byte vector
            x = (torch.randn(rows, cols) * 5.0).to(dtype)
            ref = torch.log_softmax(x.double(), dim=-1).to(dtype)
            tol = {"atol": 1e-5, "rtol": 1e-5} if dtype == torch.float32 else {"atol": 2e-2, "rtol": 1e-2}
            torch.testing.assert_close(kernel.log_softmax_rows(x), ref, **tol)
