"""Executors of evaluations behind one interface: the local WorkerPool (one host's devices) and RayPool
(a Ray cluster). Both offer submit / evaluate / evaluate_many / profile / cancel_pending / close and
judge through the same DeviceRunner, so a verdict does not depend on where it was computed.

Usage:
    with open_executor(devices=["cuda:0", "cuda:1"], config=EvalConfig()) as pool: ...
    with open_executor(ray_address="10.0.0.5:6379", config=EvalConfig()) as pool: ...
"""

from __future__ import annotations

import re
from concurrent.futures import Future
from pathlib import Path
from typing import Protocol

from harness.baselines import BaselineCache
from harness.config import EvalConfig, HardwarePeaks
from harness.verdict import Verdict


class Executor(Protocol):
    restarts: int
    parallelism: int  # evaluations in flight at once (timing and compile stages)

    def submit(self, spec_path: str | Path, source: str, backend: str = "triton") -> Future: ...

    def evaluate(self, spec_path: str | Path, source: str, backend: str = "triton") -> Verdict: ...

    def evaluate_many(self, tasks: list) -> list[Verdict]: ...

    def submit_profile(self, spec_path: str | Path) -> Future: ...

    def profile(self, spec_path: str | Path) -> dict: ...

    def check_fits(self, spec_path: str | Path) -> dict: ...

    def warm_up(self, timeout_s: float = 300.0) -> float: ...

    def cancel_pending(self) -> int: ...

    def close(self) -> None: ...

    def terminate(self) -> None: ...


class DeviceListError(ValueError):
    """A device list that cannot be run as given; the message names the entry and what to do."""


def parse_devices(text: str | None) -> list[str] | None:
    """"cuda:0,cuda:1" -> ["cuda:0", "cuda:1"]; "cpu,cpu" or "cpu*2" -> two CPU workers; None/"" -> None.

    A GPU named twice is refused: two timing workers on one GPU would time each other's kernels."""
    if not text:
        return None
    out: list[str] = []
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        name, star, times = item.partition("*")
        if not (name == "cpu" or name.startswith("cuda:") and name[5:].isdigit()):
            raise DeviceListError(f"--devices {text}: {name!r} is not a device (expected cpu or cuda:N, "
                                  "several as cuda:0,cuda:1)")
        if star and not (times.isdigit() and int(times) >= 1):
            raise DeviceListError(f"--devices {text}: {item!r}: expected NAME*COUNT with a count of 1 or more")
        count = int(times) if star else 1
        if name != "cpu" and (count > 1 or name in out):
            raise DeviceListError(f"--devices {text}: {name} is named more than once; name each GPU once "
                                  "(two timing workers on one GPU would time each other's kernels)")
        out += [name] * count
    return out or None


def visible_gpus() -> int:
    """GPUs this process may use (CUDA_VISIBLE_DEVICES applies). torch counts them through NVML where it
    can, so asking creates no CUDA context here (the workers are other processes)."""
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def check_devices(devices: list[str], flag: str = "--devices") -> list[str]:
    """`devices` as given when every GPU named is on this host; else DeviceListError naming the first that
    is not, and what is there."""
    wanted = [d for d in devices if d.startswith("cuda:")]
    if not wanted:
        return devices
    count = visible_gpus()
    for name in wanted:
        if int(name[5:]) >= count:
            import os

            mask = os.environ.get("CUDA_VISIBLE_DEVICES")
            seen = f" (CUDA_VISIBLE_DEVICES={mask})" if mask is not None else ""
            there = (f"this host has {count} GPU{'s' if count > 1 else ''}{seen}: "
                     + ",".join(f"cuda:{i}" for i in range(count)) if count
                     else f"no GPU is visible on this host{seen}; use cpu")
            raise DeviceListError(f"{flag} {','.join(devices)}: {name} is not there; {there}")
    return devices


def check_device(device: str, here: bool = True) -> str:
    """`device` when it is cpu, cuda or cuda:N and (`here`) a device this host has; else DeviceListError naming
    --device and what to use instead. `kkb bench` and `kkb tune` ask it before anything runs."""
    if not re.fullmatch(r"cpu|cuda(:\d+)?", device):
        raise DeviceListError(f"--device {device!r}: cpu, cuda or cuda:N")
    if device == "cpu" or not here:
        return device
    count = visible_gpus()
    if int(device.partition(":")[2] or 0) >= count:
        has = f"has {count} CUDA device(s)" if count else "has no CUDA GPU (or this torch is a CPU build)"
        raise DeviceListError(f"--device {device}: this machine {has}; use --device cpu (Triton's interpreter)"
                              + (f" or cuda:0..cuda:{count - 1}" if count else ""))
    return device


def devices_from_cli(devices: str | None, ray_address: str | None = None, device: str | None = None
                     ) -> list[str] | None:
    """The --devices of `kkb bench` / `kkb tune`, checked before any work starts: each entry a device of
    this host, named once, and not given together with --ray (a cluster has its own GPUs) or --device."""
    if not devices:
        return None
    if ray_address:
        raise DeviceListError(f"--devices {devices} and --ray {ray_address}: give one (--devices: this host's "
                              "GPUs; --ray: the GPUs of a Ray cluster, one per evaluation)")
    if device:
        raise DeviceListError(f"--device {device} and --devices {devices}: give one (--device for one, "
                              "--devices for several)")
    return check_devices(parse_devices(devices) or [])


def open_executor(devices: list[str] | None = None, config: EvalConfig | None = None,
                  peaks: HardwarePeaks | None = None, compile_workers: int = 0, ray_address: str | None = None,
                  baselines: BaselineCache | None = None, ray_workers: int | None = None) -> Executor:
    """The local pool on `devices`, or, given ray_address, the Ray cluster there (never a silent fallback)."""
    if ray_address:
        from harness.ray_pool import RayPool

        return RayPool(ray_address, config=config, peaks=peaks, workers=ray_workers)
    from harness.pool import WorkerPool

    return WorkerPool(devices, config=config, peaks=peaks, compile_workers=compile_workers, baselines=baselines)
