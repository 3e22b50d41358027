"""Our gemm_epilogue kernel and cuBLAS (F.linear, without and with bias) once each inside a profiler range, at the
tall (32768x2048 -> 512) and square (4096^3) bf16 shapes, for Nsight Compute (kernel names, SM activity, bytes);
with --probe, also the Gluon GEMM probe's forms (benchmarks/gpu/gluon_gemm_probe.py): gluon_gemm_ws at its defaults,
gluon_gemm_ws3 at the first of its WS3_CONFIGS.

Usage (GPU box, repo root):
    ncu --profile-from-start off --clock-control none --section LaunchStats --section SpeedOfLight \
        --metrics sm__cycles_active.min,sm__cycles_active.max,sm__cycles_active.avg \
        python3 benchmarks/gpu/ncu_gemm_vendor.py [--probe] [--shapes 32768x2048x512]

Each callable runs three times outside the range (compilation, cuBLAS heuristics), then once inside it.
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SHAPES = "32768x2048x512,4096x4096x4096"  # (M, K, N) of linear_gelu_bf16_tall and _4096


def _calls(kernel, probe, x, w, b, r) -> dict:
    """The callables profiled at one shape (probe: the Gluon GEMM probe module, or None)."""
    import torch

    calls = {
        "ours": lambda: kernel.gemm_epilogue(x, w, b, r, 0.5, "gelu"),
        "cublas_linear": lambda: torch.nn.functional.linear(x, w),
        "cublas_linear_bias": lambda: torch.nn.functional.linear(x, w, b),
    }
    if probe is not None:
        calls["gluon_ws"] = lambda: probe.gluon_gemm_ws(x, w, b, r, 0.5)
        calls["gluon_ws3"] = lambda: probe.gluon_gemm_ws3(x, w, b, r, 0.5, **probe.WS3_CONFIGS[0])
    return calls


def main(argv: list[str]) -> int:
    import argparse

    import torch

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--probe", action="store_true", help="also the Gluon probe's ws and ws3 forms")
    parser.add_argument("--shapes", default=SHAPES, help="MxKxN,...")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(REPO))
    from harness.spec import import_file

    kernel = import_file(REPO / "corpus/kernels/gemm_epilogue/kernel.py", "ncu_gemm_vendor")
    probe = None
    if args.probe:
        sys.path.insert(0, str(REPO / "benchmarks" / "gpu"))
        import gluon_gemm_probe as probe
    torch.manual_seed(0)
    for m, k, n in [tuple(int(v) for v in shape.split("x")) for shape in args.shapes.split(",")]:
        x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16) / k**0.5
        b = torch.randn(n, device="cuda", dtype=torch.bfloat16)
        r = torch.randn(m, n, device="cuda", dtype=torch.bfloat16)
        runs = _calls(kernel, probe, x, w, b, r)
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
    raise SystemExit(main(sys.argv[1:]))
