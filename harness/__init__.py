"""kernelkb's benchmark harness: the impartial judge of candidate kernels (stdlib, torch, triton, numpy).

Usage:
    from harness import evaluate, load_spec, EvalConfig, HardwarePeaks, Status
    verdict = evaluate("examples/specs/row_softmax.py", open("cand.py").read(), backend="triton")
    print(verdict.status, verdict.reasons, verdict.latency_ms)

See harness/README.md for the spec conventions, the checks and the timing method.
"""

from __future__ import annotations

from harness.config import EvalConfig, HardwarePeaks
from harness.evaluate import BackendUnavailable, evaluate, profile_spec
from harness.spec import Spec, SpecError, Variant, load_spec
from harness.verdict import ExitCode, Status, Verdict


def __getattr__(name: str):
    if name == "WorkerPool":  # imported lazily: it starts threads and processes
        from harness.pool import WorkerPool

        return WorkerPool
    if name == "RayPool":  # imported lazily: `ray` is an optional dependency
        from harness.ray_pool import RayPool

        return RayPool
    if name == "open_executor":
        from harness.executor import open_executor

        return open_executor
    raise AttributeError(f"module 'harness' has no attribute {name!r}")


__all__ = ["BackendUnavailable", "EvalConfig", "ExitCode", "HardwarePeaks", "RayPool", "Spec", "SpecError",
           "Status", "Variant", "Verdict", "WorkerPool", "evaluate", "load_spec", "open_executor", "profile_spec"]
