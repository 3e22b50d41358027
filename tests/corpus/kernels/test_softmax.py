"""The softmax library kernel against each of its specs (tiny sizes), judged by the harness on CPU.

Usage: .venv/bin/python -m pytest -x -q tests/corpus/kernels/test_softmax.py

Each spec is evaluated as a copy with SIZE = "tiny" on every variant (the Triton interpreter runs ~1 ms
per program): rows that fit in registers, rows wider than MAX_FUSED_N (the looped path), narrow rows.
The kernels are shared with log_softmax (corpus/kernels/_shared/softmax.py); the cooperative path's test
here drives both families.
"""

from __future__ import annotations

import pytest
import torch

from tests.corpus.kernels.library_check import family_kernel, family_tests, set_tunables

FAMILY = "softmax"


test_kernel_passes_spec, test_sidecar_matches_kernel = family_tests(FAMILY)


@pytest.mark.parametrize("cols", [
    300,  # fused path, masked lanes
    5000,  # looped path once MAX_FUSED_N is lowered below it, ragged last block
])
def test_fused_and_looped_paths_agree_on_large_logits(cols: int, monkeypatch):
    kernel = family_kernel(FAMILY, "test_softmax_kernel")
    x = torch.randn(3, cols) * 60.0  # exp would overflow without the max shift
    fused = kernel.softmax_rows(x)
    set_tunables(monkeypatch, kernel, MAX_FUSED_N=256, BLOCK_LOOP=1024)
    looped = kernel.softmax_rows(x)
    expected = torch.softmax(x.double(), dim=-1).float()
    torch.testing.assert_close(fused, expected, atol=1e-6, rtol=1e-4)
    torch.testing.assert_close(looped, expected, atol=1e-6, rtol=1e-4)


def test_auto_takes_the_looped_path_while_the_rows_in_flight_fit_in_l2(monkeypatch):
    kernel = family_kernel(FAMILY, "test_softmax_auto")
    t = {**kernel.TUNABLES, "WIDE_STRATEGY": "auto", "PROGRAMS_PER_SM": 1, "LOOP_L2_BYTES": 1 << 20}
    x = torch.empty(0)  # the CPU: 4 programs in flight
    assert kernel._wide_strategy(t, 4096, 65536, x) == "looped"  # 4 rows of 256 KiB: 1 MiB
    assert kernel._wide_strategy(t, 4096, 393216, x) == "coop"  # 4 rows of 1.5 MiB
    assert kernel._wide_strategy(t, 2, 131072, x) == "looped"  # 2 rows in flight
    assert kernel._wide_strategy({**t, "WIDE_STRATEGY": "coop"}, 2, 16, x) == "coop"


def test_the_coop_path_through_the_launcher(monkeypatch):
    kernel = family_kernel(FAMILY, "test_softmax_coop_launcher")
    monkeypatch.setitem(kernel.TUNABLES, "WIDE_STRATEGY", "coop")
    monkeypatch.setitem(kernel.TUNABLES, "MAX_FUSED_N", 256)
    monkeypatch.setitem(kernel.TUNABLES, "COOP_CHUNK", 256)
    x = torch.randn(3, 1000) * 20.0
    torch.testing.assert_close(kernel.softmax_rows(x), torch.softmax(x, dim=-1), atol=1e-6, rtol=1e-4)


def test_one_exp_online_update_matches_torch(monkeypatch):
    """The looped path's one-exp online update: rising and falling rows, large logits, a ragged last block
    (masked lanes after real ones)."""
    kernel = family_kernel(FAMILY, "test_softmax_one_exp")
    for key, value in {"WIDE_STRATEGY": "looped", "MAX_FUSED_N": 256, "BLOCK_LOOP": 512}.items():
        monkeypatch.setitem(kernel.TUNABLES, key, value)
    torch.manual_seed(0)
    ramp = torch.linspace(-50.0, 50.0, 1300)
    x = torch.stack([torch.randn(1300) * 60.0, ramp, ramp.flip(0), torch.full((1300,), -7.0)])
    torch.testing.assert_close(kernel.softmax_rows(x), torch.softmax(x.double(), dim=-1).float(), atol=1e-5, rtol=1e-4)


# The cooperative path is one source for softmax/ and log_softmax/: one test drives both families' kernels.
# family: (entry point, reference, ramp sign (+: the row's max in its last chunk, -: in its first),
#          fp32 tolerance, bf16 tolerance)
COOP_CASES = {
    "softmax": ("softmax_rows", torch.softmax, -1.0, {"atol": 1e-6, "rtol": 1e-4}, {"atol": 2e-3, "rtol": 1e-2}),
    "log_softmax": ("log_softmax_rows", torch.log_softmax, 1.0, {"atol": 1e-5, "rtol": 1e-5},
                    {"atol": 2e-2, "rtol": 1e-2}),
}


@pytest.mark.parametrize("family", sorted(COOP_CASES))
def test_coop_rows_of_odd_widths(monkeypatch, family: str):
    """Coop path: rows shorter than a 16-byte vector, shorter than a chunk (many rows per round), misaligned
    rows over several chunks, a last chunk left with only the row's tail, whole chunks; fp32 and bf16."""
    entry, reference, ramp_sign, tol32, tol16 = COOP_CASES[family]
    kernel = family_kernel(family, f"test_{family}_coop")
    options = {"WIDE_STRATEGY": "coop", "MAX_FUSED_N": 1, "num_warps_coop": 4, "COOP_PROGRAMS_PER_SM": 3}
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


def test_log_softmax_is_softmax_with_the_flag():
    """One source: the two families differ in their TUNABLES and LOG_SOFTMAX, and both offer both launchers."""
    softmax, log = family_kernel("softmax", "test_softmax_flag"), family_kernel("log_softmax", "test_log_flag")
    assert (softmax.LOG_SOFTMAX, log.LOG_SOFTMAX) == (False, True)
    assert set(softmax.TUNABLES) == set(log.TUNABLES)
    x = torch.randn(4, 300)
    torch.testing.assert_close(softmax.log_softmax_rows(x), log.log_softmax_rows(x))
    torch.testing.assert_close(log.softmax_rows(x, log=False), softmax.softmax_rows(x))
