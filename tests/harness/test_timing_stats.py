"""harness/timing.py: quantiles, the median's standard error and the wall-clock path on CPU."""

from __future__ import annotations

import time

from harness.config import EvalConfig
from harness.timing import Clock, median_rse, quantile, time_callable


def test_quantile_interpolates():
    s = [1.0, 2.0, 3.0, 4.0, 5.0]
    assert quantile(s, 0.5) == 3.0 and quantile(s, 0.2) == 1.8 and quantile(s, 0.0) == 1.0


def test_rse_shrinks_with_more_samples():
    few = [1.0, 1.1, 0.9, 1.05, 0.95] * 2
    many = few * 20
    assert median_rse(many) < median_rse(few)
    assert median_rse([1.0, 2.0]) == float("inf")  # too few to say


def test_wall_clock_on_cpu_measures_the_call():
    config = EvalConfig(warmup=1, min_reps=5, max_reps=8, max_timing_s=5.0, target_rse=0.0)
    t = time_callable(lambda s: time.sleep(s), lambda: [0.01], "cpu", config)
    assert t.method == "wall_clock" and 5 <= t.n <= 8
    assert 9.0 < t.median_ms < 60.0 and t.p20_ms <= t.median_ms <= t.p80_ms


def test_adaptive_stop_on_a_stable_callable():
    config = EvalConfig(warmup=0, min_reps=10, max_reps=10_000, max_timing_s=5.0, target_rse=0.2)
    t = time_callable(lambda: sum(range(2000)), list, "cpu", config)
    assert t.n < 10_000 and t.rse < 0.2


def test_clock_detects_patching(monkeypatch):
    import torch

    clock = Clock.capture()
    assert clock.tampered() == []
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a, **k: None)
    assert clock.tampered() == ["torch.cuda.synchronize"]


def test_event_path_reports_the_host_time_of_each_call():
    # The GPU path's bookkeeping with host-side stand-ins for the CUDA events (each records the host clock), so the
    # events bracket the call: the call's own host time (here a 2 ms sleep) is reported as host_ms
    from harness.timing import _time_cuda

    class Event:
        def __init__(self, enable_timing: bool = False):
            self.t = 0.0

    def record(event):
        event.t = time.perf_counter()

    clock = Clock(time.perf_counter, Event, record, lambda a, b: (b.t - a.t) * 1e3, lambda: None, lambda e: None)
    config = EvalConfig(warmup=1, warmup_ms=0.0, min_reps=5, max_reps=12, max_timing_s=5.0, target_rse=0.0,
                        min_timed_ms=0.0, l2_flush_bytes=1024)
    t = _time_cuda(lambda s: time.sleep(s), lambda: [0.002], "cpu", config, clock)
    assert t.method == "cuda_events" and 5 <= t.n <= 12
    assert t.host_ms is not None and 1.9 < t.host_ms <= t.median_ms  # a 2 ms sleep cannot take less
    quick = _time_cuda(lambda: None, list, "cpu", config, clock)
    assert quick.host_ms < t.host_ms / 2  # a call that does nothing costs less than one that sleeps 2 ms
