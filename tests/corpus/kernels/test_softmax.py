"""The softmax library kernel against each of its specs (tiny sizes), judged by the harness on CPU.

Usage: .venv/bin/python -m pytest -x -q tests/corpus/kernels/test_softmax.py

Each spec is evaluated as a copy with SIZE = "tiny" on every variant (the Triton interpreter runs ~1 ms
per program): rows that fit in registers, rows wider than MAX_FUSED_N (the looped path), narrow rows.
"""

from __future__ import annotations

import pytest
import torch

from harness.spec import import_file
from tests.corpus.kernels.library_check import KERNELS, family_tests

FAMILY = "softmax"


test_kernel_passes_spec, test_sidecar_matches_kernel = family_tests(FAMILY)


@pytest.mark.parametrize("cols", [
    300,  # fused path, masked lanes
    5000,  # looped path once MAX_FUSED_N is lowered below it, ragged last block
])
def test_fused_and_looped_paths_agree_on_large_logits(cols: int):
    kernel = import_file(KERNELS / FAMILY / "kernel.py", "test_softmax_kernel")
    x = torch.randn(3, cols) * 60.0  # exp would overflow without the max shift
    fused = kernel.softmax_rows(x)
    saved = dict(kernel.TUNABLES)
    try:
        kernel.TUNABLES.update(MAX_FUSED_N=256, BLOCK_LOOP=1024)
        looped = kernel.softmax_rows(x)
    finally:
        kernel.TUNABLES.update(saved)
    expected = torch.softmax(x.double(), dim=-1).float()
    torch.testing.assert_close(fused, expected, atol=1e-6, rtol=1e-4)
    torch.testing.assert_close(looped, expected, atol=1e-6, rtol=1e-4)


def test_one_exp_online_update_matches_torch(monkeypatch):
    """ONE_EXP: rising and falling rows, large logits, a ragged last block (masked lanes after real ones)."""
    kernel = import_file(KERNELS / FAMILY / "kernel.py", "test_softmax_one_exp")
    for key, value in {"WIDE_STRATEGY": "looped", "ONE_EXP": True, "MAX_FUSED_N": 256, "BLOCK_LOOP": 512}.items():
        monkeypatch.setitem(kernel.TUNABLES, key, value)
    torch.manual_seed(0)
    ramp = torch.linspace(-50.0, 50.0, 1300)
    x = torch.stack([torch.randn(1300) * 60.0, ramp, ramp.flip(0), torch.full((1300,), -7.0)])
    torch.testing.assert_close(kernel.softmax_rows(x), torch.softmax(x.double(), dim=-1).float(), atol=1e-5, rtol=1e-4)


# The cooperative path lives in the block softmax/ and log_softmax/ share: one test drives both kernels.
# family: (entry point, reference, ramp sign (+: the row's max in its last chunk, -: in its first),
#          fp32 tolerance, bf16 tolerance)
COOP_CASES = {
    "softmax": ("softmax_rows", torch.softmax, -1.0, {"atol": 1e-6, "rtol": 1e-4}, {"atol": 2e-3, "rtol": 1e-2}),
    "log_softmax": ("log_softmax_rows", torch.log_softmax, 1.0, {"atol": 1e-5, "rtol": 1e-5},
                    {"atol": 2e-2, "rtol": 1e-2}),
}


LANE_FMA_UNMASKED = {"COOP_TREE": "lane", "COOP_EXP2": "fma", "COOP_UNMASKED": True}


@pytest.mark.parametrize("family", sorted(COOP_CASES))
@pytest.mark.parametrize("sync, prefetch, lane", [
    ("counter", 0, {}), ("counter", 1, {}),
    ("tagged", 1, {"COOP_TREE": "split"}), ("tagged", 2, {"COOP_TREE": "split"}),  # max tree, then sum tree
    ("tagged", 1, LANE_FMA_UNMASKED),  # per-lane stats, one tree; whole chunks unmasked
    ("tagged", 2, {"COOP_TREE": "lane", "COOP_EXP2": True}),  # per-lane stats, even widths all masked
], ids=["counter-0", "counter-1", "tagged-1", "tagged-2", "lane-fma-unmasked-1", "lane-exp2-2"])
def test_coop_rows_of_odd_widths(monkeypatch, family: str, sync: str, prefetch: int, lane: dict):
    """Coop path: rows shorter than a 16-byte vector, shorter than a chunk (many rows per round), misaligned
    rows over several chunks, a last chunk left with only the row's tail, whole chunks; fp32 and bf16."""
    entry, reference, ramp_sign, tol32, tol16 = COOP_CASES[family]
    kernel = import_file(KERNELS / family / "kernel.py", f"test_{family}_coop")
    options = {"WIDE_STRATEGY": "coop", "MAX_FUSED_N": 1, "COOP_SYNC": sync, "COOP_PREFETCH": prefetch,
               "num_warps_coop": 4, "COOP_PROGRAMS_PER_SM": 3, **lane}
    for key, value in options.items():
        monkeypatch.setitem(kernel.TUNABLES, key, value)
    torch.manual_seed(0)
    for rows, cols, chunk in [(7, 3, 64), (30, 40, 64), (5, 67, 64), (3, 301, 64), (4, 128, 64), (6, 17, 16)]:
        monkeypatch.setitem(kernel.TUNABLES, "COOP_CHUNK", chunk)
        for dtype in (torch.float32, torch.bfloat16):  # 4 and 8 elements to a 16-byte vector
            x = (torch.randn(rows, cols) * 30.0 + ramp_sign * torch.linspace(-200.0, 200.0, cols)).to(dtype)
            ref = reference(x.double(), dim=-1).to(dtype)
            tol = tol32 if dtype == torch.float32 else tol16
            torch.testing.assert_close(getattr(kernel, entry)(x), ref, **tol)
