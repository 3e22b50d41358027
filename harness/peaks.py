"""Hardware limits: the fraction of the limit a latency reaches, and a measured bandwidth fallback.

Usage: from harness.peaks import fraction_of_limit, measured_bandwidth
    frac, kind = fraction_of_limit(bytes_moved, flops, flops_dtype, latency_ms, peaks)

The fallback bandwidth is a device-to-device copy (read + write bytes / time), measured once per device
name and cached in $KKB_HARNESS_CACHE (default ~/.cache/kernelkb/harness_peaks.json).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from harness.config import HardwarePeaks


def _cache_path() -> Path:
    return Path(os.environ.get("KKB_HARNESS_CACHE", Path.home() / ".cache" / "kernelkb")) / "harness_peaks.json"


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


def fraction_of_limit(bytes_moved: int | None, flops: int | None, flops_dtype: str | None,
                      latency_ms: float | None, peaks: HardwarePeaks) -> tuple[float | None, str | None]:
    """max(bytes / (t * bandwidth), flops / (t * peak)) and which limit it is ("memory" | "compute")."""
    if not latency_ms or latency_ms <= 0:
        return None, None
    seconds = latency_ms / 1e3
    candidates: list[tuple[float, str]] = []
    if bytes_moved and peaks.memory_bandwidth_bytes_per_s:
        candidates.append((bytes_moved / (seconds * peaks.memory_bandwidth_bytes_per_s), "memory"))
    peak = peaks.flops_per_s.get(flops_dtype or "") if flops else None
    if flops and peak:
        candidates.append((flops / (seconds * peak), "compute"))
    if not candidates:
        return None, None
    return max(candidates)
