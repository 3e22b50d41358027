"""Our gemm_epilogue kernel and cuBLAS (F.linear, without and with bias) once each inside a profiler range, at the
tall (32768x2048 -> 512) and square (4096^3) bf16 shapes, for Nsight Compute (kernel names, SM activity, bytes).

Usage (GPU box, repo root):
    ncu --profile-from-start off --clock-control none --section LaunchStats --section SpeedOfLight \
        --metrics sm__cycles_active.min,sm__cycles_active.max,sm__cycles_active.avg python3 benchmarks/gpu/ncu_gemm_vendor.py
"""
import sys, torch
from pathlib import Path
sys.path.insert(0, ".")
from harness.spec import import_file
k = import_file(Path("corpus/kernels/gemm_epilogue/kernel.py"), "ncu_gemm")
torch.manual_seed(0)
for (M, K, N) in [(32768, 2048, 512), (4096, 4096, 4096)]:
    x = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(N, K, device="cuda", dtype=torch.bfloat16) / 45
    b = torch.randn(N, device="cuda", dtype=torch.bfloat16)
    r = torch.randn(M, N, device="cuda", dtype=torch.bfloat16)
    runs = []
    for sk in (False, True):
        def f(sk=sk):
            k.TUNABLES["STREAM_K"] = sk; k.TUNABLES["TALL_STREAM_K"] = sk
            return k.gemm_epilogue(x, w, b, r, 0.5, "gelu")
        runs.append((f"ours_sk={sk}", f))
    runs.append(("cublas_linear", lambda: torch.nn.functional.linear(x, w)))
    runs.append(("cublas_linear_bias", lambda: torch.nn.functional.linear(x, w, b)))
    outs = {}
    for name, f in runs:
        for _ in range(3):
            outs[name] = f()
    torch.cuda.synchronize()
    d = (outs["ours_sk=True"].float() - outs["ours_sk=False"].float()).abs().max().item()
    print(f"[ncu_gemm] {M}x{K}x{N} max|sk - dp| = {d}", flush=True)
    torch.cuda.profiler.start()
    for name, f in runs:
        print(f"[ncu_gemm] {M}x{K}x{N} {name}", flush=True)
        f()
        torch.cuda.synchronize()
    torch.cuda.profiler.stop()
