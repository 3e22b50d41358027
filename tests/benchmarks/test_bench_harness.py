"""benchmarks/bench_harness.py's clock-settling summary, checked on CPU."""

from __future__ import annotations

import pytest

from benchmarks.bench_harness import window_means


def test_window_means_split_by_elapsed_time():
    means = window_means([1.0] * 30 + [2.0] * 200)  # 30 ms of 1 ms calls, then 400 ms of 2 ms calls
    assert means["0-5ms"] == 1.0 and means["5-25ms"] == 1.0
    assert means["25-150ms"] == pytest.approx((5 * 1.0 + 60 * 2.0) / 65)
    assert means["150-400ms"] == 2.0 and means[">400ms"] == 2.0
