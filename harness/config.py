"""Settings of the harness: one frozen `EvalConfig`, the tolerance table and `HardwarePeaks`.

Usage: from harness.config import EvalConfig; EvalConfig(trials=3, time_compile_baseline=False)

No pydantic here: the harness runs from the working tree on a bare CUDA machine (torch, triton, numpy only).
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

# Default tolerances keyed by dtype name (str(torch.dtype) without the "torch." prefix): (atol, rtol).
# A spec overrides them with module-level ATOL / RTOL or TOLERANCE (see harness/spec.py).
TOLERANCES: dict[str, tuple[float, float]] = {
    "float64": (1e-7, 1e-7),
    "float32": (1e-4, 1e-4),
    "float16": (1e-2, 1e-2),
    "bfloat16": (1e-2, 1e-2),
    "int64": (0.0, 0.0),
    "int32": (0.0, 0.0),
    "bool": (0.0, 0.0),
}
DEFAULT_TOLERANCE = (1e-4, 1e-4)


def tolerance_for(dtype_name: str) -> tuple[float, float]:
    """(atol, rtol) for a dtype name such as "float32" or "torch.bfloat16"."""
    return TOLERANCES.get(dtype_name.removeprefix("torch."), DEFAULT_TOLERANCE)


@dataclass(frozen=True)
class HardwarePeaks:
    """The hardware limits a result is measured against, as plain numbers.

    Given numbers are nominal (a datasheet's, or a user's): the timer-escape ceiling is
    `EvalConfig.max_fraction_of_limit` times them. Leave the bandwidth None to fall back on a measured
    device copy (cached per device name), judged with the wider `max_fraction_of_measured_copy`; an empty
    `flops_per_s` leaves the compute limit unknown.
    """

    memory_bandwidth_bytes_per_s: float | None = None
    # dtype name ("bfloat16", "float16", "float32", "tf32", "float8_e4m3fn") -> FLOP/s
    flops_per_s: dict[str, float] = field(default_factory=dict)
    card: str | None = None  # what the numbers describe, e.g. "NVIDIA H100 SXM5 80GB"; None: given by hand
    source: str = ""  # where they come from, e.g. "nominal peaks of corpus/accelerators/h100.yaml"

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict | None) -> HardwarePeaks:
        data = data or {}
        return cls(data.get("memory_bandwidth_bytes_per_s"), dict(data.get("flops_per_s") or {}),
                   data.get("card"), data.get("source") or "")


@dataclass(frozen=True)
class EvalConfig:
    """How one candidate is judged. Defaults suit a GPU; tests shrink them for the Triton interpreter."""

    trials: int = 3  # correctness trials per variant, each with fresh inputs from a secret seed
    check_variants: bool = True  # also check the spec's extra VARIANTS (catches hard-coded shapes)
    warmup: int = 3  # untimed calls before timing (after the first, compiling, call)
    # GPU: then back-to-back calls for this long (do_bench's default), so the clocks have settled to
    # the level sustained work runs at before anything is timed (see harness/timing.py)
    warmup_ms: float = 25.0
    # GPU: and time repetitions until they add up to this much (do_bench's default rep), within
    # max_reps / max_timing_s: a 0.2 ms matmul gets ~500 repetitions over the same window do_bench uses
    min_timed_ms: float = 100.0
    min_reps: int = 10  # timed repetitions, at least
    max_reps: int = 500  # and at most
    max_timing_s: float = 1.0  # time cap of the adaptive loop for one callable
    target_rse: float = 0.005  # stop once the relative standard error of the median is below this
    l2_flush_bytes: int = 256 * 1024 * 1024  # buffer written between repetitions (H200 L2 is 60 MB)
    clone_pool_bytes: int = 4 * 1024**3  # fresh input clones made ahead of a batch of timed repetitions
    time_eager_baseline: bool = True
    time_compile_baseline: bool = True  # torch.compile is slow on CPU: tests switch it off
    time_candidate: bool = True
    # whole evaluation of one candidate in its worker; None = derived from the reference's measured times
    # (harness/limits.py: floor + slack x the work the checks and timing ask of it), so a hang on a small
    # spec is caught in seconds; a number overrides (`kkb bench --timeout`)
    timeout_s: float | None = None
    timeout_floor_s: float = 20.0  # a derived limit is at least this: import, model build, first calls
    # added where a candidate's first calls run on a GPU (Triton JIT compiles and autotuning happen there):
    # a one-shot evaluation, a pool's compile stage, a pool without one
    compile_allowance_s: float = 60.0
    timeout_slack: float = 20.0  # the candidate may take this many times the reference's time per call
    # the same on CPU, where Triton's interpreter runs numpy per program: a few hundred times eager torch on
    # small inputs, so the floor decides there; larger CPU runs pass --timeout
    interpreter_slack: float = 300.0
    timeout_max_s: float = 1800.0  # a derived limit never exceeds this
    profile_timeout_s: float = 1200.0  # the reference's profile (eager and torch.compile baselines)
    # get_inputs() runs with the device as the default device, so a 6 GB input is drawn on the GPU in
    # milliseconds rather than on the host in seconds (falls back to the host if the spec refuses)
    inputs_on_device: bool = True
    cpu_memory_limit_bytes: int = 8 * 1024**3  # RLIMIT_AS of a CPU worker (torch alone maps ~1 GB)
    gpu_memory_fraction: float = 0.9  # torch.cuda.set_per_process_memory_fraction of a GPU worker
    # share of a process's cap above the footprint estimate (harness/memory.py), and the smallest cap: a
    # candidate's own workspace is unknown until it runs (an out-of-memory error is retried alone)
    memory_cap_factor: float = 2.0
    memory_cap_min_bytes: int = 2 * 1024**3
    fork_server: bool = True  # fork workers from a process with torch imported (cheap restarts)
    static_checks: bool = True  # source checks before running; tests switch off to prove runtime checks
    # faster than this share of a nominal limit (the card's datasheet peak, or one given) -> rejected as a
    # timer escape; the 5% covers clock and counting error, never a measured copy (a read-only kernel
    # beats a copy: an honest MSELoss ran 3.13 TB/s on an H100 whose copy measures ~3.0 TB/s, 3.35 nominal)
    max_fraction_of_limit: float = 1.05
    # the same against a measured device copy, on a device without facts: a copy reaches ~89-92% of the
    # nominal bandwidth (H100 3.0 of 3.35 TB/s, H200 4.25 of 4.8), so an honest kernel may pass it by ~12%
    max_fraction_of_measured_copy: float = 1.25
    degenerate_strict_rel: float = 0.05  # stricter relative check for specs whose output is ~0/constant

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict | None) -> EvalConfig:
        return cls(**(data or {}))

    def baseline_fields(self) -> dict:
        """The settings a spec's baselines depend on (part of their cache key, harness/baselines.py)."""
        names = ("warmup", "warmup_ms", "min_timed_ms", "min_reps", "max_reps", "max_timing_s", "target_rse",
                 "l2_flush_bytes", "clone_pool_bytes", "time_eager_baseline", "time_compile_baseline",
                 "inputs_on_device")
        return {name: getattr(self, name) for name in names}

    @classmethod
    def for_cpu_tests(cls, **overrides) -> EvalConfig:
        """Small settings for the Triton interpreter in CI."""
        base = {
            "trials": 2, "warmup": 1, "warmup_ms": 0.0, "min_reps": 3, "max_reps": 5, "max_timing_s": 2.0, "time_compile_baseline": False,
            "timeout_s": 120.0, "cpu_memory_limit_bytes": 6 * 1024**3,
        }
        base.update(overrides)
        return cls(**base)


def cache_dir() -> Path:
    """Where the harness caches what it measured once (bandwidth per device, spec baselines):
    $KKB_HARNESS_CACHE, default ~/.cache/kernelkb."""
    return Path(os.environ.get("KKB_HARNESS_CACHE") or Path.home() / ".cache" / "kernelkb")
