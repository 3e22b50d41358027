"""What limited a candidate, read from its verdict's measurements: the class that picks what to retrieve.

Usage: from agent_client.bottleneck import classify; b = classify(verdict); b.kind, b.reason

Classes, from the verdict's fraction of the hardware limit (bytes over the bandwidth, or FLOPs over
the peak rate, whichever is larger: `fraction_of_limit`, `limit_kind`) and its launch overhead
(`host_launch_ms`, the host time of one call, against `latency_ms`, the GPU time):
- launch_bound: the GPU waits for the host (host time at least LAUNCH_SHARE of the GPU time) or the
  kernel is so short that a launch's fixed cost dominates (under TINY_KERNEL_MS);
- memory_bound / compute_bound: at least BOUND_FRACTION of that limit;
- low_occupancy: neither limit nor the launch: the hardware sits idle most of the time (too few
  programs in flight, serial loops, stalls on latency);
- unknown: no timing or no limit to compare with (the CPU interpreter; a failed candidate).
"""

from __future__ import annotations

from dataclasses import dataclass

BOUND_FRACTION = 0.6  # a kernel at 60% of its limit is bound by it: the rest is hard to win by other means
LAUNCH_SHARE = 0.8  # host time of a call at 80% of the GPU time: the launch, not the kernel, sets the pace
TINY_KERNEL_MS = 0.01  # 10 us: a launch costs a few us, so shorter kernels are mostly launch

KINDS = ("memory_bound", "compute_bound", "launch_bound", "low_occupancy", "unknown")


@dataclass(frozen=True)
class Bottleneck:
    kind: str  # one of KINDS
    fraction_of_limit: float | None  # achieved / limit of `limit_kind`
    limit_kind: str | None  # "memory" | "compute"
    launch_share: float | None  # host_launch_ms / latency_ms
    reason: str  # one line for the prompt: what was measured and what it means

    @property
    def label(self) -> str:
        return self.kind.replace("_", "-")


def classify(verdict: dict | None) -> Bottleneck:
    """The bottleneck of a passed candidate's verdict (unknown for anything else)."""
    v = verdict or {}
    latency = _number(v.get("latency_ms"))
    host = _number(v.get("host_launch_ms"))
    fraction = _number(v.get("fraction_of_limit"))
    limit = v.get("limit_kind") if v.get("limit_kind") in ("memory", "compute") else None
    launch_share = host / latency if host is not None and latency else None
    if v.get("status") != "passed" or latency is None:
        return Bottleneck("unknown", fraction, limit, launch_share, "not timed: nothing measured to classify")
    if launch_share is not None and launch_share >= LAUNCH_SHARE:
        return Bottleneck("launch_bound", fraction, limit, launch_share,
                          f"the host takes {host:.3g} ms a call for {latency:.3g} ms of GPU work: the launch sets "
                          "the pace")
    if latency < TINY_KERNEL_MS:
        return Bottleneck("launch_bound", fraction, limit, launch_share,
                          f"{latency * 1000:.3g} us of GPU work: a launch's fixed cost is most of it")
    if fraction is None or limit is None:
        return Bottleneck("unknown", fraction, limit, launch_share, "no hardware limit to compare with")
    if fraction >= BOUND_FRACTION:
        return Bottleneck(f"{limit}_bound", fraction, limit, launch_share,
                          f"{fraction:.0%} of the {limit} limit: bound by it")
    return Bottleneck("low_occupancy", fraction, limit, launch_share,
                      f"{fraction:.0%} of the {limit} limit and not launch-bound: the hardware is mostly idle")


def _number(value) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
