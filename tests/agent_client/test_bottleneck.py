"""A verdict's bottleneck from its measured fractions of the hardware limits and its launch overhead."""

from __future__ import annotations

import pytest

from agent_client.bottleneck import BOUND_FRACTION, classify


@pytest.mark.parametrize(("verdict", "kind"), [
    ({"status": "passed", "latency_ms": 0.5, "host_launch_ms": 0.03, "fraction_of_limit": 0.91,
      "limit_kind": "memory"}, "memory_bound"),
    ({"status": "passed", "latency_ms": 3.0, "host_launch_ms": 0.03, "fraction_of_limit": 0.72,
      "limit_kind": "compute"}, "compute_bound"),
    ({"status": "passed", "latency_ms": 0.02, "host_launch_ms": 0.03, "fraction_of_limit": 0.2,
      "limit_kind": "memory"}, "launch_bound"),  # the host needs longer than the GPU
    ({"status": "passed", "latency_ms": 0.004, "fraction_of_limit": 0.1, "limit_kind": "memory"},
     "launch_bound"),  # 4 us of work: mostly the launch's fixed cost
    ({"status": "passed", "latency_ms": 0.8, "host_launch_ms": 0.03, "fraction_of_limit": 0.25,
      "limit_kind": "memory"}, "low_occupancy"),  # neither limit nor the launch
    ({"status": "passed", "latency_ms": 12.0, "fraction_of_limit": None, "limit_kind": None}, "unknown"),
    ({"status": "wrong", "latency_ms": None, "reasons": ["x"]}, "unknown"),
    (None, "unknown"),
])
def test_classify(verdict, kind):
    got = classify(verdict)
    assert got.kind == kind and got.reason


def test_the_bound_threshold_is_inclusive_and_fractions_are_kept():
    at = classify({"status": "passed", "latency_ms": 1.0, "fraction_of_limit": BOUND_FRACTION,
                   "limit_kind": "memory", "host_launch_ms": 0.05})
    below = classify({"status": "passed", "latency_ms": 1.0, "fraction_of_limit": BOUND_FRACTION - 0.01,
                      "limit_kind": "memory", "host_launch_ms": 0.05})
    assert (at.kind, below.kind) == ("memory_bound", "low_occupancy")
    assert at.fraction_of_limit == BOUND_FRACTION and at.launch_share == pytest.approx(0.05)
