"""What the harness says of a candidate: `Status`, the worker's `ExitCode`, and the `Verdict` record.

Usage: from harness.verdict import Verdict, Status; verdict.to_dict()
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from enum import Enum, IntEnum


class Status(str, Enum):
    passed = "passed"
    wrong = "wrong"
    compile_error = "compile_error"
    runtime_error = "runtime_error"
    illegal_memory_access = "illegal_memory_access"
    timeout = "timeout"
    crashed = "crashed"
    rejected = "rejected"


class ExitCode(IntEnum):
    """Exit status of a worker process, one per Status (the result itself comes on the private channel)."""

    PASSED = 0
    WRONG = 10
    COMPILE_ERROR = 11
    RUNTIME_ERROR = 12
    ILLEGAL_MEMORY_ACCESS = 13
    REJECTED = 14
    HARNESS_ERROR = 15  # the spec or the harness itself failed: not the candidate's fault
    TIMEOUT = 124  # set by the parent when it kills a worker that ran past the timeout
    CRASHED = 125  # set by the parent when a worker died without sending a result

    @classmethod
    def for_status(cls, status: Status) -> ExitCode:
        return cls[status.name.upper()]


@dataclass(frozen=True)
class Verdict:
    status: Status
    reasons: list[str]  # empty == passed; written to be pasted into the next prompt
    latency_ms: float | None = None  # median of the timed repetitions
    latency_p20_ms: float | None = None
    latency_p80_ms: float | None = None
    n_timed: int = 0  # number of timed repetitions behind the quantiles
    host_launch_ms: float | None = None  # median host time of one timed call (Python + launch), GPU timing only
    eager_ms: float | None = None  # median of the reference in eager mode, same timing method
    compile_ms: float | None = None  # median of torch.compile(reference), same timing method
    speedup_vs_eager: float | None = None
    speedup_vs_compile: float | None = None
    fraction_of_limit: float | None = None  # max(bytes/(t*bandwidth), flops/(t*peak)); 1.0 = at the limit
    limit_kind: str | None = None  # "memory" | "compute"
    bytes_moved: int | None = None  # sum of the input and output tensor sizes of the timed variant
    flops: int | None = None  # the spec's get_flops, else FlopCounterMode on the reference; timed variant
    diagnostics: dict = field(default_factory=dict)  # mismatch counts, worst indices, ops seen, timing...
    backend: str = ""
    device: str = ""
    spec_name: str = ""
    candidate_hash: str = ""  # sha256 of the candidate source, first 16 hex digits
    # where it was measured (harness/measured.py): the device as its driver names it ("NVIDIA H200", "cpu"),
    # the worker's torch/triton/cuda/python versions, and one entry per variant the harness ran (inputs and
    # parameters as shape and dtype, correct, and for timed variants latency_ms and the baselines' speedups)
    device_name: str = ""
    versions: dict = field(default_factory=dict)
    measurements: list = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return self.status is Status.passed

    def to_dict(self) -> dict:
        data = asdict(self)
        data["status"] = self.status.value
        return data

    @classmethod
    def from_dict(cls, data: dict) -> Verdict:
        names = {f.name for f in fields(cls)}
        kwargs = {k: v for k, v in data.items() if k in names}
        kwargs["status"] = Status(kwargs["status"])
        kwargs["reasons"] = list(kwargs.get("reasons") or [])
        return cls(**kwargs)
