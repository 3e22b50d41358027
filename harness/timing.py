"""Time a callable: warm-up, L2 flush between repetitions, CUDA events, adaptive stop on the median's error.

Usage: from harness.timing import time_callable, Clock; t = time_callable(fn, make_args, "cuda:0", config)

Method "cuda_events" (GPU), do_bench's window and steps:
- `config.warmup` calls, then back-to-back calls on one argument set for `config.warmup_ms` (25 ms, as
  do_bench): a power-capped GPU under sustained load runs at a lower clock than a rested one. On the H200 a
  4096^3 bf16 matmul takes 0.175 ms over its first 25 ms of back-to-back calls, 0.190 ms over 25-150 ms
  and 0.203 ms after that (benchmarks/results/harness-h200-20261130T131003Z.json, "matmul_bf16_method").
- timed repetitions, each "flush an L2-sized buffer, start event, fn on fresh arguments, end event" (the
  clones for a batch are made before it, outside the timed region, so caching across calls fails), in
  batches queued one ahead so the GPU never idles between them, until the relative standard error of the
  median is below config.target_rse with at least min_reps and config.min_timed_ms (100 ms, do_bench's
  rep) of timed work, or config.max_timing_s / max_reps is reached.
- host_ms: the median host time of the timed calls themselves (Python and the launch, not the GPU's work). The
  queued repetitions keep it out of the GPU time, as in do_bench, while it is shorter than a repetition's GPU work
  (the flush and the kernel); where it is longer the GPU reaches the start event before the host has launched the
  kernel and the wait is timed (the tall bf16 GEMM's Gluon path through the JIT on a slow host: 0.19 ms a call,
  p20-p80 0.1125-0.1968 ms, benchmarks/results/library-h200-gemm-hostms-20261202T012451Z.json
  in commit 0b14644a5). It is reported beside the GPU time because a kernel whose launch takes longer than its
  GPU time is launch-bound wherever nothing queues ahead of it (that GEMM's Triton path, and its Gluon path
  before launch plans: ~0.1 ms of Python a call against ~0.11 ms on the H200,
  benchmarks/results/gemm-hopper-timing-h200-20261201T235101Z.json in commit 8cf6c933e).
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
    event_synchronize: Callable | None = None

    @classmethod
    def capture(cls) -> Clock:
        import torch

        ev = torch.cuda.Event
        return cls(time.perf_counter, ev, ev.record, ev.elapsed_time, torch.cuda.synchronize, ev.synchronize)

    def tampered(self) -> list[str]:
        """Names of the captured functions that are no longer the ones in place (monkey-patching)."""
        import torch

        now = {"time.perf_counter": time.perf_counter, "torch.cuda.Event": torch.cuda.Event,
               "torch.cuda.Event.record": torch.cuda.Event.record,
               "torch.cuda.Event.elapsed_time": torch.cuda.Event.elapsed_time,
               "torch.cuda.synchronize": torch.cuda.synchronize,
               "torch.cuda.Event.synchronize": getattr(torch.cuda.Event, "synchronize", None)}
        mine = {"time.perf_counter": self.perf_counter, "torch.cuda.Event": self.event_cls,
                "torch.cuda.Event.record": self.event_record,
                "torch.cuda.Event.elapsed_time": self.event_elapsed,
                "torch.cuda.synchronize": self.synchronize,
                "torch.cuda.Event.synchronize": self.event_synchronize}
        return [name for name in now if now[name] is not mine[name]]


@dataclass(frozen=True)
class Timing:
    median_ms: float
    p20_ms: float
    p80_ms: float
    n: int  # timed repetitions
    rse: float  # relative standard error of the median at the stop
    method: str  # "cuda_events" | "wall_clock"
    host_ms: float | None = None  # median host time of one timed call ("cuda_events" only)

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


def _summarise(times: list[float], method: str, host_times: list[float] | None = None) -> Timing:
    s = sorted(times)
    return Timing(statistics.median(s), quantile(s, 0.2), quantile(s, 0.8), len(s), median_rse(s), method,
                  statistics.median(host_times) if host_times else None)


def _arg_bytes(args: list) -> int:
    import torch

    return sum(a.numel() * a.element_size() for a in args if isinstance(a, torch.Tensor))


def _settle(fn, args: list, warmup_ms: float, clock: Clock) -> None:
    """Call fn back to back for about warmup_ms of GPU time (the count estimated from one timed call)."""
    if warmup_ms <= 0:
        return
    start, end = clock.event_cls(enable_timing=True), clock.event_cls(enable_timing=True)
    clock.event_record(start)
    fn(*args)
    clock.event_record(end)
    clock.synchronize()
    one_ms = max(clock.event_elapsed(start, end), 1e-3)
    for _ in range(min(int(warmup_ms / one_ms), 100_000)):
        fn(*args)
    clock.synchronize()


def _issue(fn, make_args, n: int, flush, clock: Clock) -> tuple[list, list, list, list]:
    """Queue n timed repetitions: fresh clones for all n first (untimed), then flush, start, fn, end each;
    (argument sets, start events, end events, host ms of each fn call)."""
    arg_sets = [make_args() for _ in range(n)]
    starts = [clock.event_cls(enable_timing=True) for _ in range(n)]
    ends = [clock.event_cls(enable_timing=True) for _ in range(n)]
    host = []
    for i in range(n):
        flush.zero_()  # evict inputs and last outputs from L2, outside the timed region
        clock.event_record(starts[i])
        t0 = clock.perf_counter()
        fn(*arg_sets[i])  # the output is freed after the end event (stream-ordered)
        host.append((clock.perf_counter() - t0) * 1e3)
        clock.event_record(ends[i])
    return arg_sets, starts, ends, host


def _time_cuda(fn, make_args, device: str, config: EvalConfig, clock: Clock) -> Timing:
    import torch

    flush = torch.empty(config.l2_flush_bytes // 4, dtype=torch.int32, device=device)
    for _ in range(config.warmup):
        fn(*make_args())
    clock.synchronize()
    _settle(fn, make_args(), config.warmup_ms, clock)
    # Fresh clones for a batch are made before the batch (outside the timed region), so each repetition
    # is "flush, start, fn, end" as in triton.testing.do_bench. The next batch is queued before the host
    # waits on the current one, so the GPU never idles between batches: an idle gap lets a power-capped
    # GPU's clock recover and would read fast against do_bench's unbroken run. Two batches of clones are
    # alive at once, each capped by half of config.clone_pool_bytes. Inputs larger than half the pool get
    # one clone at a time and no batch ahead (harness/memory.py counts either): a repetition of them takes
    # milliseconds, against which the host's gap between batches is small.
    arg_bytes = _arg_bytes(make_args())
    fit = max(1, config.clone_pool_bytes // 2 // max(1, arg_bytes))
    look_ahead = 2 * arg_bytes <= config.clone_pool_bytes
    times: list[float] = []
    host_times: list[float] = []
    t0 = clock.perf_counter()
    size = max(config.min_reps, 5)
    current = _issue(fn, make_args, max(1, min(size, fit, config.max_reps)), flush, clock)
    queued = len(current[1])
    while True:
        size = max(size, 20)
        ahead = min(size, fit, config.max_reps - queued) if look_ahead else 0
        upcoming = _issue(fn, make_args, ahead, flush, clock) if ahead > 0 else None
        queued += ahead
        # wait for this batch only: the next one keeps the GPU busy meanwhile
        if clock.event_synchronize is not None:
            clock.event_synchronize(current[2][-1])
        else:
            clock.synchronize()
        times += [clock.event_elapsed(s, e) for s, e in zip(current[1], current[2])]
        host_times += current[3]
        current = upcoming
        elapsed = clock.perf_counter() - t0
        stop = (len(times) >= config.max_reps or elapsed > config.max_timing_s
                or (len(times) >= config.min_reps and sum(times) >= config.min_timed_ms
                    and median_rse(times) < config.target_rse))
        if not stop and not look_ahead and queued < config.max_reps:
            current = _issue(fn, make_args, 1, flush, clock)  # the last clone was freed with its batch
            queued += 1
        if stop or current is None:
            break
    current = None
    clock.synchronize()  # a batch queued ahead and not needed is waited for, not timed
    return _summarise(times, "cuda_events", host_times)


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
        del args  # one set of clones at a time
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
