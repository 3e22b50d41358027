"""Our gemm_epilogue kernel and cuBLAS (F.linear, without and with bias) once each inside a profiler range, at the
tall (32768x2048 -> 512) and square (4096^3) bf16 shapes, for Nsight Compute (kernel names, SM activity, bytes).

Usage (GPU box, repo root):
    ncu --profile-from-start off --clock-control none --section LaunchStats --section SpeedOfLight \
        --metrics sm__cycles_active.min,sm__cycles_active.max,sm__cycles_active.avg \
        python3 benchmarks/gpu/ncu_gemm_vendor.py

Each callable runs three times outside the range (compilation, cuBLAS heuristics), then once inside it.
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SHAPES = [(32768, 2048, 512), (4096, 4096, 4096)]  # (M, K, N) of linear_gelu_bf16_tall and _4096


def main() -> int:
    import torch

    sys.path.insert(0, str(REPO))
    from harness.spec import import_file

    kernel = import_file(REPO / "corpus/kernels/gemm_epilogue/kernel.py", "ncu_gemm_vendor")
    torch.manual_seed(0)
    for m, k, n in SHAPES:
        x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16) / k**0.5
        b = torch.randn(n, device="cuda", dtype=torch.bfloat16)
        r = torch.randn(m, n, device="cuda", dtype=torch.bfloat16)
        runs = {
            "ours": lambda: kernel.gemm_epilogue(x, w, b, r, 0.5, "gelu"),
            "cublas_linear": lambda: torch.nn.functional.linear(x, w),
            "cublas_linear_bias": lambda: torch.nn.functional.linear(x, w, b),
        }
        for fn in runs.values():
            for _ in range(3):
                fn()
        torch.cuda.synchronize()
        torch.cuda.profiler.start()
        for name, fn in runs.items():
            print(f"[ncu_gemm_vendor] {m}x{k}x{n} {name}", flush=True)
            fn()
            torch.cuda.synchronize()
        torch.cuda.profiler.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
