"""Hardware limits: the fraction of the limit a latency reaches, and a measured bandwidth fallback.

Usage: from harness.peaks import fraction_of_limit, measured_bandwidth
    frac, kind = fraction_of_limit(bytes_moved, flops, flops_dtype, latency_ms, peaks)

The compute limit of a float32 result is the larger of the fp32 rate and a third of the TF32 rate (3xTF32
reaches fp32 accuracy on the tensor cores), so an fp32-accurate tensor-core kernel is not taken for a
timer escape.

The fallback bandwidth is a device-to-device copy (read + write bytes / time), measured once per device
name and cached in $KKB_HARNESS_CACHE (default ~/.cache/kernelkb/harness_peaks.json).
"""

from __future__ import annotations

import json
from pathlib import Path

from harness.config import HardwarePeaks, cache_dir


def _cache_path() -> Path:
    return cache_dir() / "harness_peaks.json"


def measured_bandwidth(device: str) -> float | None:
    """Device-copy bandwidth in bytes/s for a CUDA device, cached per device name; None on CPU."""
    if not device.startswith("cuda"):
        return None
    import torch

    name = torch.cuda.get_device_name(torch.device(device))
    path = _cache_path()
    try:
        cache = json.loads(path.read_text())
    except (OSError, ValueError):
        cache = {}
    if name in cache:
        return float(cache[name])
    n = 512 * 1024 * 1024  # bytes per buffer: far above any L2
    src = torch.empty(n, dtype=torch.uint8, device=device).fill_(1)
    dst = torch.empty_like(src)
    for _ in range(3):
        dst.copy_(src)
    torch.cuda.synchronize(device)
    best = float("inf")
    for _ in range(10):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        dst.copy_(src)
        end.record()
        torch.cuda.synchronize(device)
        best = min(best, start.elapsed_time(end) / 1e3)
    bandwidth = 2 * n / best
    del src, dst
    cache[name] = bandwidth
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(cache, indent=1))
    except OSError:
        pass
    return bandwidth


# fp32-accurate products also come from the tensor cores: three TF32 products per fp32 product (3xTF32,
# error against float64 below cuBLAS fp32's on the H200: benchmarks/results/gemm_precision-h200-20261130T1310Z.json)
TF32_PRODUCTS_PER_FP32 = 3


def compute_peak(flops_dtype: str | None, flops_per_s: dict[str, float]) -> float | None:
    """FLOP/s limit for results of `flops_dtype`: its own peak; for float32 also the TF32 rate over three."""
    if not flops_dtype:
        return None
    peak = flops_per_s.get(flops_dtype)
    if flops_dtype == "float32" and flops_per_s.get("tf32"):
        peak = max(peak or 0.0, flops_per_s["tf32"] / TF32_PRODUCTS_PER_FP32)
    return peak or None


def parse_peak_tflops(text: str) -> dict[str, float]:
    """"bfloat16=796,tf32=406,float32=51" -> {dtype: FLOP/s}; a ValueError names the bad part."""
    out: dict[str, float] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, sep, value = part.partition("=")
        try:
            tflops = float(value) if sep and name.strip() else float("nan")
        except ValueError:
            tflops = float("nan")
        if not tflops > 0:
            raise ValueError(f"peak TFLOP/s {part!r} in {text!r}: expected DTYPE=TFLOPS with TFLOPS > 0, "
                             "e.g. bfloat16=796")
        out[name.strip()] = tflops * 1e12
    return out


def fraction_of_limit(bytes_moved: int | None, flops: int | None, flops_dtype: str | None,
                      latency_ms: float | None, peaks: HardwarePeaks) -> tuple[float | None, str | None]:
    """max(bytes / (t * bandwidth), flops / (t * peak)) and which limit it is ("memory" | "compute")."""
    if not latency_ms or latency_ms <= 0:
        return None, None
    seconds = latency_ms / 1e3
    candidates: list[tuple[float, str]] = []
    if bytes_moved and peaks.memory_bandwidth_bytes_per_s:
        candidates.append((bytes_moved / (seconds * peaks.memory_bandwidth_bytes_per_s), "memory"))
    peak = compute_peak(flops_dtype, peaks.flops_per_s) if flops else None
    if flops and peak:
        candidates.append((flops / (seconds * peak), "compute"))
    if not candidates:
        return None, None
    return max(candidates)
