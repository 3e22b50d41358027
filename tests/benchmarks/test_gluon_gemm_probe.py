"""The Gluon GEMM probe against float32 torch on a Hopper GPU, at shapes with partial tiles and a ragged K (TMA
zero-fills the loads past the edges and clips the stores). Skipped without an sm_90 GPU; its run on the H200 is
logged under benchmarks/results/logs/."""

from __future__ import annotations

import pytest
import torch

from tests.benchmarks.hopper_probe import HOPPER_ONLY, load_probe

pytestmark = HOPPER_ONLY


CASES = [
    ("gluon_gemm", {"BK": 64, "STAGES": 3, "GROUP_M": 1}),
    ("gluon_gemm", {"BK": 32, "STAGES": 6, "GROUP_M": 8}),
    ("gluon_gemm_ws", {"BK": 64, "STAGES": 3, "GROUP_M": 8}),  # warp-specialised: a loader warp, two consumers
    ("gluon_gemm_ws", {"BK": 64, "STAGES": 4, "GROUP_M": 8, "EPI_REGS": True}),  # epilogue from registers
    ("gluon_gemm_ws", {"BK": 64, "STAGES": 3, "GROUP_M": 1, "GELU": "bf16x2"}),  # tanh on bf16 pairs
    ("gluon_gemm_ws_epi", {"STAGES": 3, "GROUP_M": 8}),  # and the epilogue in a warp group of its own
    ("gluon_gemm_ws_epi", {"STAGES": 3, "GROUP_M": 1, "AHEAD": True, "MMA_REGS": 168, "EPI_REGS": 152,
                           "LOADER_REGS": 152}),  # residual slices a slice ahead, each half freed once read
    ("gluon_gemm_ws_epi", {"STAGES": 3, "GROUP_M": 1, "AHEAD": True, "MMA_REGS": 168, "EPI_REGS": 176,
                           "LOADER_REGS": 176, "CHUNK": 16}),  # slices of 16 rows
    ("gluon_gemm_ws_epi", {"BN": 128, "STAGES": 4, "GROUP_M": 1, "AHEAD": True, "EPI_WARPS": 4, "MMA_REGS": 128,
                           "EPI_REGS": 128, "LOADER_REGS": 128}),  # 128x128 tiles, four epilogue warps
    ("gluon_gemm_ws_epi", {"BN": 128, "STAGES": 4, "GROUP_M": 1, "AHEAD": True, "MMA_REGS": 168, "EPI_REGS": 152,
                           "LOADER_REGS": 152}),  # and two
    ("gluon_gemm_ws3", {"BK": 64, "STAGES": 4, "CHUNK": 0}),  # three MMA warp groups, epilogue from registers
    ("gluon_gemm_ws3", {"BK": 64, "STAGES": 4, "CHUNK": 1}),  # in two column halves
    ("gluon_gemm_ws3", {"BK": 32, "STAGES": 4, "CHUNK": 2}),  # residual in and output out by TMA
    ("gluon_gemm_ws3", {"BK": 32, "STAGES": 4, "CHUNK": 8}),  # and through shared memory
]


# partial tiles and K; the tall form; 7-8 units of 64 rows a program (ws3: chunks of 3, 3 and 1-2 units)
@pytest.mark.parametrize("m, k, n", [(1000, 520, 328), (4096, 2048, 512), (32768, 256, 512)])
@pytest.mark.parametrize("fn, config", CASES, ids=[f"{fn}-" + "-".join(f"{k}{v}" for k, v in c.items())
                                                   for fn, c in CASES])
def test_gluon_gemm_matches_float32(m: int, k: int, n: int, fn: str, config: dict):
    probe = load_probe("gluon_gemm_probe")
    gemm = getattr(probe, fn)
    torch.manual_seed(0)
    x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    w = (torch.randn(n, k, device="cuda") / k**0.5).to(torch.bfloat16)
    b = torch.randn(n, device="cuda", dtype=torch.bfloat16)
    r = torch.randn(m, n, device="cuda", dtype=torch.bfloat16)
    y = gemm(x, w, b, r, 0.5, **config)
    expected = torch.nn.functional.gelu(x.float() @ w.float().T + b.float()) * 0.5 + r.float()
    torch.testing.assert_close(y.float(), expected, atol=3e-2, rtol=2e-2)
    wrong = gemm(x, w, b, torch.zeros_like(r), 0.5, **config)  # the residual is really added
    assert (wrong.float() - expected).abs().max().item() > 1.0


@pytest.mark.parametrize("m, k, n", [(1000, 520, 328), (4096, 2048, 512)])
def test_gluon_gemm_ws_main_loop_alone(m: int, k: int, n: int):
    """EPI_NONE (the main loop timed without the epilogue) stores x W^T + b, rounded to bf16, and nothing else."""
    probe = load_probe("gluon_gemm_probe")
    torch.manual_seed(0)
    x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    w = (torch.randn(n, k, device="cuda") / k**0.5).to(torch.bfloat16)
    b = torch.randn(n, device="cuda", dtype=torch.bfloat16)
    r = torch.randn(m, n, device="cuda", dtype=torch.bfloat16)
    y = probe.gluon_gemm_ws(x, w, b, r, 0.5, BK=64, STAGES=3, GROUP_M=1, EPI_NONE=True)
    torch.testing.assert_close(y.float(), x.float() @ w.float().T + b.float(), atol=3e-2, rtol=2e-2)
