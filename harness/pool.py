"""WorkerPool: many candidates over persistent workers on one host's devices, with a parallel compile stage.

Usage:
    with WorkerPool(["cuda:0", "cuda:1"], config=EvalConfig(), compile_workers=4) as pool:
        verdicts = pool.evaluate_many([(spec_path, source, "triton"), ...])

One device thread per entry of `devices` takes candidates from a shared queue and judges each through its
DeviceRunner (harness/device.py: footprint, baselines once, time limit, memory share, out-of-memory retry;
the same code a Ray actor runs, harness/ray_pool.py). The runners share one BaselineCache, so a spec's
baselines are measured once per kind of device (its name and software versions) and every GPU of that
kind uses them; a device named twice (`cpu,cpu`) gets two threads sharing one memory budget. A crash, hang
or lost worker on one device ends that candidate's evaluation only: the device's worker is replaced and
its thread takes the next candidate. Each verdict says where it ran (`diagnostics["where"]`).
Stage 1 (optional, compile_workers > 0): compile workers, spread over the devices, import each candidate
and call it once per variant, which fills the on-disk Triton / extension caches; a failure there is the
verdict. They hold their share of the device's memory budget like any evaluation, so a huge spec runs one
process at a time while small ones overlap.
Stage 2: the device's timing worker checks and times it (cache hit: no compile on the timed GPU).
"""

from __future__ import annotations

import itertools
import queue
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Self

from harness.baselines import BaselineCache
from harness.config import EvalConfig, HardwarePeaks
from harness.device import DeviceRunner
from harness.jobs import default_device, precheck
from harness.process import HarnessStopped, WorkerProcess
from harness.spec import Spec, load_spec
from harness.verdict import Verdict

Task = tuple[str | Path, str, str]  # (spec path, candidate source, backend)


class WorkerPool:
    def __init__(self, devices: list[str] | None = None, config: EvalConfig | None = None,
                 peaks: HardwarePeaks | None = None, compile_workers: int = 0,
                 baselines: BaselineCache | None = None) -> None:
        self.devices = list(devices or [default_device()])
        self.config = config or EvalConfig()
        self.peaks = peaks
        self.baselines = baselines if baselines is not None else BaselineCache()
        self._queue: queue.Queue = queue.Queue()
        self._lock = threading.Lock()
        self.runners: list[DeviceRunner] = []
        for device in self.devices:
            runner = DeviceRunner(device, self.config, peaks, self.baselines)
            if self.runners:  # a candidate compiled beside one device may be timed on another
                runner.compile_seconds = self.runners[0].compile_seconds
            first = next((r for r in self.runners if r.device == device), None)
            if first is not None:
                runner.share_budget_with(first)
            self.runners.append(runner)
        self._threads = [threading.Thread(target=self._device_loop, args=(i, r), daemon=True,
                                          name=f"kkb-{r.device}-{i}") for i, r in enumerate(self.runners)]
        for t in self._threads:
            t.start()
        self._compile_pool = ThreadPoolExecutor(compile_workers) if compile_workers > 0 else None
        self._compile_local = threading.local()
        self._compile_workers: list[WorkerProcess] = []
        self._next_runner = itertools.count()
        self.compile_workers = compile_workers
        self._busy: list[str | None] = [None] * len(self.runners)  # the spec each device thread works on

    @property
    def parallelism(self) -> int:
        """Evaluations this pool works on at once (device threads and compile workers): what a caller
        keeps queued, at least, to leave no device idle."""
        return len(self.runners) + self.compile_workers

    @property
    def restarts(self) -> int:
        """Workers replaced after a verdict other than passed (for reports)."""
        return sum(r.restarts for r in self.runners)

    def warm_up(self, timeout_s: float = 300.0) -> float:
        """Start every device's worker now, side by side (else the first candidate of each device waits for
        it); the seconds it took. Throughput measured after it is the pool's steady state."""
        t0 = time.monotonic()
        starters = [threading.Thread(target=lambda r=r: r.info, daemon=True) for r in self.runners]
        for t in starters:
            t.start()
        import torch._dynamo  # noqa: F401 - the footprint's first dispatch mode imports it (seconds): now
        for t in starters:
            t.join(max(0.0, timeout_s - (time.monotonic() - t0)))
        return time.monotonic() - t0

    def slots(self) -> list[dict]:
        """Each device thread: its device, the pid of its current worker, and the spec it works on now."""
        return [{"worker": i, "device": r.device, "pid": r.workers.current.pid, "busy": self._busy[i]}
                for i, r in enumerate(self.runners)]

    # ---- public -------------------------------------------------------------------------------------
    def submit(self, spec_path: str | Path, source: str, backend: str = "triton") -> Future:
        """A Future of the Verdict of one candidate (SpecTooLarge / ProfileError / HarnessStopped as its
        exception when the spec cannot be run or the harness stops)."""
        spec = load_spec(spec_path)
        fut: Future = Future()
        early = precheck(spec, source, backend, self.devices[0], self.config)
        if early is not None:
            fut.set_result(early)
            return fut
        if self._compile_pool is not None:
            stage = self._compile_pool.submit(self._compile_then_queue, spec, source, backend, fut)
            stage.add_done_callback(lambda f, fut=fut: fut.cancel() if f.cancelled() else None)
        else:
            self._queue.put((spec, source, backend, fut, False))
        return fut

    def evaluate(self, spec_path: str | Path, source: str, backend: str = "triton") -> Verdict:
        return self.submit(spec_path, source, backend).result()

    def evaluate_many(self, tasks: list[Task]) -> list[Verdict]:
        futures = [self.submit(*task) for task in tasks]
        return [f.result() for f in futures]

    def submit_profile(self, spec_path: str | Path) -> Future:
        """A Future of the spec's baselines (eager, torch.compile, bytes, FLOPs) on the first free device."""
        fut: Future = Future()
        self._queue.put((load_spec(spec_path), None, "torch", fut, False))
        return fut

    def profile(self, spec_path: str | Path) -> dict:
        return self.submit_profile(spec_path).result()

    def check_fits(self, spec_path: str | Path) -> dict:
        """The spec's footprint estimate on the pool's first device; SpecTooLarge (with the estimate) when
        one evaluation cannot fit there. Starts that device's worker (for its memory), runs nothing."""
        return self.runners[0].check_fits(load_spec(spec_path)).to_dict()

    def cancel_pending(self) -> int:
        """Cancel the candidates not started yet (e.g. at a time budget); returns how many."""
        n = 0
        if self._compile_pool is not None:
            self._compile_pool.shutdown(wait=False, cancel_futures=True)
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            if item is None:  # keep a shutdown sentinel where it was
                self._queue.put(None)
                break
            item[3].cancel()
            n += 1
        return n

    def close(self) -> None:
        if self._compile_pool is not None:  # first, so nothing is queued after the sentinels
            self._compile_pool.shutdown(wait=True)
        for _ in self._threads:
            self._queue.put(None)
        for t in self._threads:
            t.join(timeout=60)
        with self._lock:
            workers = list(self._compile_workers)
        for w in workers:
            w.close()

    def terminate(self) -> None:
        """Stop now (Ctrl-C, SIGTERM): every worker of this pool is killed, none starts again, and each
        unfinished Future ends with HarnessStopped."""
        for runner in self.runners:
            runner.stop()
        self.cancel_pending()
        self.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type, *exc) -> None:
        if exc_type is not None and issubclass(exc_type, (KeyboardInterrupt, SystemExit)):
            self.terminate()
        else:
            self.close()

    # ---- stages -------------------------------------------------------------------------------------
    def _compile_then_queue(self, spec: Spec, source: str, backend: str, fut: Future) -> None:
        try:
            local = self._compile_local
            if getattr(local, "runner", None) is None:
                local.runner = self.runners[next(self._next_runner) % len(self.runners)]
            worker = getattr(local, "worker", None)
            if worker is None:  # restarted by run() after compile_stage closed it on a failure
                # compile workers share the GPU with the timing worker: their memory cap comes with each job
                worker = local.worker = local.runner.new_worker(replace(self.config, gpu_memory_fraction=0.2))
                with self._lock:
                    self._compile_workers.append(worker)
            verdict = local.runner.compile_stage(spec, source, backend, worker)
            if verdict is not None:
                verdict.diagnostics["where"] = {"executor": "local", "device": local.runner.device,
                                                "worker": "compile", "compiled_ahead": True}
                fut.set_result(verdict)
                return
            self._queue.put((spec, source, backend, fut, True))
        except BaseException as exc:  # noqa: BLE001 - never leave a Future unresolved
            fut.set_exception(exc)

    def _device_loop(self, index: int, runner: DeviceRunner) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                break
            spec, source, backend, fut, compiled = item
            if not fut.set_running_or_notify_cancel():
                continue
            self._busy[index] = spec.name
            try:
                if source is None:
                    fut.set_result(runner.profile(spec))
                else:
                    verdict = runner.evaluate(spec, source, backend, first_calls=not compiled)
                    verdict.diagnostics["where"] = {"executor": "local", "device": runner.device, "worker": index,
                                                    "compiled_ahead": compiled}
                    fut.set_result(verdict)
            except BaseException as exc:  # noqa: BLE001 - resolve the Future whatever happened
                if not isinstance(exc, HarnessStopped):
                    try:
                        runner.workers.replace()
                    except HarnessStopped:
                        pass
                fut.set_exception(exc)
            finally:
                self._busy[index] = None
        runner.close()
