"""Time a callable: warm-up, L2 flush between repetitions, CUDA events, adaptive stop on the median's error.

Usage: from harness.timing import time_callable, Clock; t = time_callable(fn, make_args, "cuda:0", config)

Method "cuda_events" (GPU): each repetition takes fresh arguments (make_args() clones, made before each
batch of repetitions, so caching across calls fails), writes an L2-sized buffer (outside the timed
region), then records a start event, calls fn, records an end event (as triton.testing.do_bench does). Repetitions run in batches until the relative standard error of the median is
below config.target_rse, or config.max_timing_s / max_reps is reached (at least min_reps).
Method "wall_clock" (CPU, e.g. the Triton interpreter): time.perf_counter around each call; the numbers
are marked as such and are not comparable with GPU numbers.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass

from harness.config import EvalConfig


@dataclass(frozen=True)
class Clock:
    """Private references to the timer and synchronisation, captured before any candidate is imported."""

    perf_counter: Callable[[], float]
    event_cls: type | None = None
    event_record: Callable | None = None
    event_elapsed: Callable | None = None
    synchronize: Callable | None = None

    @classmethod
    def capture(cls) -> Clock:
        import torch

        ev = torch.cuda.Event
        return cls(time.perf_counter, ev, ev.record, ev.elapsed_time, torch.cuda.synchronize)

    def tampered(self) -> list[str]:
        """Names of the captured functions that are no longer the ones in place (monkey-patching)."""
        import torch

        now = {"time.perf_counter": time.perf_counter, "torch.cuda.Event": torch.cuda.Event,
               "torch.cuda.Event.record": torch.cuda.Event.record,
               "torch.cuda.Event.elapsed_time": torch.cuda.Event.elapsed_time,
               "torch.cuda.synchronize": torch.cuda.synchronize}
        mine = {"time.perf_counter": self.perf_counter, "torch.cuda.Event": self.event_cls,
                "torch.cuda.Event.record": self.event_record,
                "torch.cuda.Event.elapsed_time": self.event_elapsed,
                "torch.cuda.synchronize": self.synchronize}
        return [name for name in now if now[name] is not mine[name]]


@dataclass(frozen=True)
class Timing:
    median_ms: float
    p20_ms: float
    p80_ms: float
    n: int  # timed repetitions
    rse: float  # relative standard error of the median at the stop
    method: str  # "cuda_events" | "wall_clock"

    def to_dict(self) -> dict:
        return asdict(self)


def quantile(sorted_values: list[float], q: float) -> float:
    if len(sorted_values) == 1:
        return sorted_values[0]
    pos = q * (len(sorted_values) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def median_rse(values: list[float]) -> float:
    """Relative standard error of the median, from the interquartile range (robust to outliers)."""
    if len(values) < 4:
        return float("inf")
    s = sorted(values)
    iqr = quantile(s, 0.75) - quantile(s, 0.25)
    sigma = iqr / 1.349
    med = statistics.median(s)
    return 1.2533 * sigma / (len(s) ** 0.5) / med if med > 0 else float("inf")


def _summarise(times: list[float], method: str) -> Timing:
    s = sorted(times)
    return Timing(statistics.median(s), quantile(s, 0.2), quantile(s, 0.8), len(s), median_rse(s), method)


def _arg_bytes(args: list) -> int:
    import torch

    return sum(a.numel() * a.element_size() for a in args if isinstance(a, torch.Tensor))


def _time_cuda(fn, make_args, device: str, config: EvalConfig, clock: Clock) -> Timing:
    import torch

    flush = torch.empty(config.l2_flush_bytes // 4, dtype=torch.int32, device=device)
    for _ in range(config.warmup):
        fn(*make_args())
    clock.synchronize()
    # Fresh clones for a batch are made before the batch (outside the timed region), so each repetition
    # is "flush, start, fn, end" as in triton.testing.do_bench; the batch is capped by clone memory.
    fit = max(1, config.clone_pool_bytes // max(1, _arg_bytes(make_args())))
    times: list[float] = []
    t0 = clock.perf_counter()
    batch = max(config.min_reps, 5)
    while True:
        n = max(1, min(batch, fit))
        arg_sets = [make_args() for _ in range(n)]
        starts = [clock.event_cls(enable_timing=True) for _ in range(n)]
        ends = [clock.event_cls(enable_timing=True) for _ in range(n)]
        for i in range(n):
            flush.zero_()  # evict inputs and last outputs from L2, outside the timed region
            clock.event_record(starts[i])
            fn(*arg_sets[i])  # the output is freed after the end event (stream-ordered)
            clock.event_record(ends[i])
        clock.synchronize()
        times += [clock.event_elapsed(s, e) for s, e in zip(starts, ends)]
        del arg_sets
        elapsed = clock.perf_counter() - t0
        if len(times) >= config.max_reps or elapsed > config.max_timing_s:
            break
        if len(times) >= config.min_reps and median_rse(times) < config.target_rse:
            break
        batch = min(max(batch, 20), config.max_reps - len(times))
    return _summarise(times, "cuda_events")


def _time_cpu(fn, make_args, config: EvalConfig, clock: Clock) -> Timing:
    for _ in range(config.warmup):
        fn(*make_args())
    times: list[float] = []
    t0 = clock.perf_counter()
    while True:
        args = make_args()
        start = clock.perf_counter()
        fn(*args)
        times.append((clock.perf_counter() - start) * 1e3)
        if len(times) >= config.max_reps or (clock.perf_counter() - t0) > config.max_timing_s:
            break
        if len(times) >= config.min_reps and median_rse(times) < config.target_rse:
            break
    return _summarise(times, "wall_clock")


def time_callable(fn: Callable, make_args: Callable[[], list], device: str, config: EvalConfig,
                  clock: Clock | None = None) -> Timing:
    """Median/p20/p80 of fn(*make_args()) on `device` (see the module docstring for the method)."""
    clock = clock or Clock.capture()
    if device.startswith("cuda"):
        return _time_cuda(fn, make_args, device, config, clock)
    return _time_cpu(fn, make_args, config, clock)
