"""Judge one candidate: static checks here, everything else in fresh worker processes; build the Verdict.

Usage:
    from harness import evaluate, EvalConfig
    verdict = evaluate("examples/specs/row_softmax.py", source, backend="triton", device="cpu",
                       config=EvalConfig.for_cpu_tests())

The spec's baselines are measured in a worker of their own before the candidate's, or read from the
baseline cache (harness/baselines.py); the candidate's time limit follows from them (harness/limits.py).
"""

from __future__ import annotations

from pathlib import Path

from harness.baselines import BaselineCache
from harness.config import EvalConfig, HardwarePeaks
from harness.device import DeviceRunner
from harness.jobs import BackendUnavailable, build_verdict, candidate_hash, default_device, make_job, precheck
from harness.spec import load_spec
from harness.verdict import Verdict

__all__ = ["BackendUnavailable", "build_verdict", "candidate_hash", "default_device", "evaluate", "make_job",
           "precheck", "profile_spec"]


def evaluate(spec_path: str | Path, candidate_source: str, backend: str = "triton", device: str | None = None,
             config: EvalConfig | None = None, peaks: HardwarePeaks | None = None,
             baselines: BaselineCache | None = None) -> Verdict:
    """Judge one candidate in a fresh worker process (see harness/README.md for what is checked).

    Raises SpecError (SpecTooLarge: the footprint estimate exceeds the device) and BackendUnavailable
    before running anything; ProfileError when the reference itself fails on the device."""
    config = config or EvalConfig()
    device = device or default_device()
    spec = load_spec(spec_path)
    early = precheck(spec, candidate_source, backend, device, config)
    if early is not None:
        return early
    runner = DeviceRunner(device, config, peaks, baselines, spare=False)
    try:
        return runner.evaluate(spec, candidate_source, backend, first_calls=True)
    finally:
        runner.close()


def profile_spec(spec_path: str | Path, device: str | None = None, config: EvalConfig | None = None,
                 peaks: HardwarePeaks | None = None, baselines: BaselineCache | None = None) -> dict:
    """The reference alone (eager and torch.compile baselines, bytes, FLOPs), cached per spec, device and
    software version."""
    config = config or EvalConfig()
    device = device or default_device()
    runner = DeviceRunner(device, config, peaks, baselines, spare=False)
    try:
        return runner.profile(load_spec(spec_path))
    finally:
        runner.close()
