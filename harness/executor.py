"""Executors of evaluations behind one interface: the local WorkerPool (one host's devices) and RayPool
(a Ray cluster). Both offer submit / evaluate / evaluate_many / profile / cancel_pending / close and
judge through the same DeviceRunner, so a verdict does not depend on where it was computed.

Usage:
    with open_executor(devices=["cuda:0", "cuda:1"], config=EvalConfig()) as pool: ...
    with open_executor(ray_address="10.0.0.5:6379", config=EvalConfig()) as pool: ...
"""

from __future__ import annotations

from concurrent.futures import Future
from pathlib import Path
from typing import Protocol

from harness.baselines import BaselineCache
from harness.config import EvalConfig, HardwarePeaks
from harness.verdict import Verdict


class Executor(Protocol):
    restarts: int

    def submit(self, spec_path: str | Path, source: str, backend: str = "triton") -> Future: ...

    def evaluate(self, spec_path: str | Path, source: str, backend: str = "triton") -> Verdict: ...

    def evaluate_many(self, tasks: list) -> list[Verdict]: ...

    def profile(self, spec_path: str | Path) -> dict: ...

    def check_fits(self, spec_path: str | Path) -> dict: ...

    def cancel_pending(self) -> int: ...

    def close(self) -> None: ...

    def terminate(self) -> None: ...


def parse_devices(text: str | None) -> list[str] | None:
    """"cuda:0,cuda:1" -> ["cuda:0", "cuda:1"]; "cuda:0*2" -> two slots on cuda:0; None/"" -> None."""
    if not text:
        return None
    out: list[str] = []
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        name, _, times = item.partition("*")
        if not (name == "cpu" or name.startswith("cuda:") and name[5:].isdigit()):
            raise ValueError(f"device {name!r}: expected cpu or cuda:N (several: cuda:0,cuda:1)")
        out += [name] * (int(times) if times.isdigit() else 1)
    return out or None


def open_executor(devices: list[str] | None = None, config: EvalConfig | None = None,
                  peaks: HardwarePeaks | None = None, compile_workers: int = 0, ray_address: str | None = None,
                  baselines: BaselineCache | None = None, ray_workers: int | None = None) -> Executor:
    """The local pool on `devices`, or, given ray_address, the Ray cluster there (never a silent fallback)."""
    if ray_address:
        from harness.ray_pool import RayPool

        return RayPool(ray_address, config=config, peaks=peaks, workers=ray_workers)
    from harness.pool import WorkerPool

    return WorkerPool(devices, config=config, peaks=peaks, compile_workers=compile_workers, baselines=baselines)
