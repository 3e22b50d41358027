"""Warm the on-disk compile caches for specs and their candidates in parallel processes, before a benchmark's
serial timed pass: the harness's timing worker then finds torch.compile's graphs (Inductor's FX graph and
autotune caches) and the candidates' Triton binaries already built.

Usage: from benchmarks.warm import share_compile_caches, warm_spec, WarmPool
       share_compile_caches(folder)        # first thing in the benchmark's process, before any pool starts
       with WarmPool(workers=12, capacity_bytes=60 * 2**30) as pool:
           futures = {name: pool.submit(warm_spec, bytes_needed, spec_path, [source], "cuda:0") for ...}

Caches are shared by folder: the benchmark sets TORCHINDUCTOR_CACHE_DIR and TRITON_CACHE_DIR once, and every
process it starts (these warm-up processes, the harness's fork server and its workers) inherits them. A
warm-up runs what the harness will run, as the harness runs it (harness/worker.py, harness/profile.py):
TF32 off, under torch.no_grad, the spec's model and inputs built by harness.spec at the same shapes, so the
cache keys match. Nothing is timed. Processes run at once only while their estimated device memory fits.
"""

from __future__ import annotations

import os
import threading
import time
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from multiprocessing import get_context
from pathlib import Path
from typing import Self


def share_compile_caches(folder: Path) -> dict[str, str]:
    """Point Inductor's and Triton's on-disk caches at `folder` for this process and all it starts (kept
    where the environment already names them)."""
    paths = {"TORCHINDUCTOR_CACHE_DIR": str(folder / "inductor"), "TRITON_CACHE_DIR": str(folder / "triton")}
    for name, path in paths.items():
        os.environ.setdefault(name, path)
        Path(os.environ[name]).mkdir(parents=True, exist_ok=True)
    return {name: os.environ[name] for name in paths}


def warm_spec(spec_path: str, sources: list[str], device: str, compile_baseline: bool = True) -> dict:
    """In a warm-up process: torch.compile the spec's reference on its timed variants and call each candidate
    once per variant. Returns {"errors": [...], "seconds": s}; a failure here is the harness's to judge."""
    import tempfile

    import torch

    from harness.guard import clone_inputs
    from harness.spec import build_model, import_file, load_spec, make_inputs

    t0 = time.monotonic()
    torch.backends.cudnn.allow_tf32 = False  # as the harness's worker runs the reference and the baselines
    torch.backends.cuda.matmul.allow_tf32 = False
    spec = load_spec(spec_path)
    errors: list[str] = []
    with torch.no_grad():
        if compile_baseline:
            for variant in (v for v in spec.variants if v.time):
                try:
                    model = build_model(spec.module.Model, spec, variant, 0, device)
                    inputs = make_inputs(spec, variant, 0, device, on_device=True)
                    torch.compile(model)(*clone_inputs(inputs))
                    del model, inputs
                except Exception as exc:  # noqa: BLE001 - the harness reports the baseline's failure
                    errors.append(f"torch.compile baseline: {type(exc).__name__}: {str(exc)[:200]}")
                _release(device)
        folder = Path(tempfile.mkdtemp(prefix="kkb_warm_"))
        for i, source in enumerate(sources):
            path = folder / f"candidate_{i}.py"
            path.write_text(source)
            try:
                module = import_file(path, "kkb_warm_candidate")
                for variant in spec.variants:
                    model = build_model(module.ModelNew, spec, variant, 0, device)
                    model(*make_inputs(spec, variant, 0, device, on_device=True))
                    del model
            except Exception as exc:  # noqa: BLE001 - the harness classifies it
                errors.append(f"candidate {i}: {type(exc).__name__}: {str(exc)[:200]}")
            _release(device)
    return {"errors": errors, "seconds": round(time.monotonic() - t0, 2)}


def _compile_threads(n: int) -> None:
    """Inductor's compile threads in a warm-up process, set before torch is imported (not in its cache
    key)."""
    os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", str(n))


def free_bytes(device: str) -> int:
    """Memory free for warm-ups on `device`: the GPU's free memory, or the host's available memory."""
    if device.startswith("cuda"):
        import torch

        return torch.cuda.mem_get_info(torch.device(device))[0]
    meminfo = Path("/proc/meminfo").read_text().split()
    return int(meminfo[meminfo.index("MemAvailable:") + 1]) * 1024


def _release(device: str) -> None:
    if device.startswith("cuda"):
        import torch

        torch.cuda.synchronize()
        torch.cuda.empty_cache()  # the process stays for the next task: give the memory back


class WarmPool:
    """Spawned processes running warm-ups; a task starts only while the bytes it declares fit `capacity_bytes`
    beside the running ones (the largest runs alone)."""

    def __init__(self, workers: int, capacity_bytes: int):
        self.capacity = capacity_bytes
        self.workers = max(1, workers)
        self._held = 0
        self._closed = False
        self._cond = threading.Condition()
        self._retired: list = []  # executors a crashed process broke
        self._ex = self._executor()

    def _executor(self, workers: int | None = None) -> ProcessPoolExecutor:
        workers = workers or self.workers
        threads = max(1, (os.cpu_count() or 1) // self.workers)  # the CPUs shared, not each process's pool
        return ProcessPoolExecutor(workers, mp_context=get_context("spawn"), initializer=_compile_threads,
                                   initargs=(threads,))

    def _call(self, fn, args):
        """fn(*args) in a warm-up process. A process that dies (a segfault) breaks its executor and fails
        every task it held: those run again, each in a process of its own, so a crash costs only its task."""
        ex = self._ex
        try:
            return ex.submit(fn, *args).result()
        except BrokenProcessPool:
            with self._cond:
                if self._closed:
                    raise
                if self._ex is ex:  # later tasks go to fresh processes
                    self._retired.append(ex)
                    self._ex = self._executor()
                alone = self._executor(1)
                self._retired.append(alone)
        try:
            return alone.submit(fn, *args).result()
        finally:
            alone.shutdown(wait=False)

    def submit(self, need_bytes: int, fn, *args) -> Future:
        out: Future = Future()
        need = min(max(0, int(need_bytes)), self.capacity)

        def run() -> None:
            with self._cond:
                self._cond.wait_for(lambda: self._closed or self._held == 0
                                    or self._held + need <= self.capacity)
                if self._closed:
                    out.cancel()
                    return
                self._held += need
            try:
                if out.set_running_or_notify_cancel():
                    try:
                        out.set_result(self._call(fn, args))
                    except BaseException as exc:  # noqa: BLE001 - the caller's Future ends whatever happens
                        out.set_exception(exc)
            finally:
                with self._cond:
                    self._held -= need
                    self._cond.notify_all()

        threading.Thread(target=run, daemon=True, name="kkb-warm").start()
        return out

    def close(self) -> None:
        """Stop now: tasks not started are cancelled and this pool's processes are ended."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        for ex in [*self._retired, self._ex]:
            procs = list((getattr(ex, "_processes", None) or {}).values())  # before shutdown clears it
            ex.shutdown(wait=False, cancel_futures=True)
            for proc in procs:  # our own warm-up processes only
                proc.terminate()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
