"""WorkerPool: many candidates over persistent workers, one per device, with a parallel compile stage.

Usage:
    with WorkerPool(["cuda:0"], config=EvalConfig(), compile_workers=4) as pool:
        verdicts = pool.evaluate_many([(spec_path, source, "triton"), ...])

Stage 1 (optional, compile_workers > 0): a separate worker process imports the candidate and calls it once
per variant, which fills the on-disk Triton / extension caches; a failure there is the verdict.
Stage 2: the device's timing worker checks and times it (cache hit: no compile on the timed GPU).
A worker is replaced after any verdict other than passed, so a crash, hang or tampering never reaches
the next candidate. Spec profiles (baselines) are measured once per spec and device, in a fresh worker
before any candidate of the session runs there, and reused.
"""

from __future__ import annotations

import queue
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Self

from harness.config import EvalConfig, HardwarePeaks
from harness.evaluate import build_verdict, default_device, make_job, precheck
from harness.process import WorkerProcess
from harness.spec import Spec, load_spec
from harness.verdict import Status, Verdict

Task = tuple[str | Path, str, str]  # (spec path, candidate source, backend)


class WorkerPool:
    def __init__(self, devices: list[str] | None = None, config: EvalConfig | None = None,
                 peaks: HardwarePeaks | None = None, compile_workers: int = 0) -> None:
        self.devices = devices or [default_device()]
        self.config = config or EvalConfig()
        self.peaks = peaks
        self._queue: queue.Queue = queue.Queue()
        self._profiles: dict[tuple[str, str], dict] = {}
        self._lock = threading.Lock()
        self._threads = [threading.Thread(target=self._device_loop, args=(d,), daemon=True, name=f"kkb-{d}")
                         for d in self.devices]
        for t in self._threads:
            t.start()
        self._compile_pool = ThreadPoolExecutor(compile_workers) if compile_workers > 0 else None
        self._compile_local = threading.local()
        self._compile_workers: list[WorkerProcess] = []
        self.restarts = 0  # workers replaced after a failure (for reports)

    # ---- public -------------------------------------------------------------------------------------
    def submit(self, spec_path: str | Path, source: str, backend: str = "triton") -> Future:
        """A Future of the Verdict of one candidate."""
        spec = load_spec(spec_path)
        fut: Future = Future()
        device = self.devices[0]
        early = precheck(spec, source, backend, device, self.config)
        if early is not None:
            fut.set_result(early)
            return fut
        if self._compile_pool is not None:
            stage = self._compile_pool.submit(self._compile_then_queue, spec, source, backend, fut)
            stage.add_done_callback(lambda f, fut=fut: fut.cancel() if f.cancelled() else None)
        else:
            self._queue.put((spec, source, backend, fut))
        return fut

    def evaluate(self, spec_path: str | Path, source: str, backend: str = "triton") -> Verdict:
        return self.submit(spec_path, source, backend).result()

    def evaluate_many(self, tasks: list[Task]) -> list[Verdict]:
        futures = [self.submit(*task) for task in tasks]
        return [f.result() for f in futures]

    def profile(self, spec_path: str | Path) -> dict:
        """Baselines of a spec (eager, torch.compile, bytes, FLOPs) on the pool's first device."""
        fut: Future = Future()
        self._queue.put((load_spec(spec_path), None, "torch", fut))
        return fut.result()

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
            item[-1].cancel()
            n += 1
        return n

    def close(self) -> None:
        if self._compile_pool is not None:  # first, so nothing is queued after the sentinels
            self._compile_pool.shutdown(wait=True)
        for _ in self._threads:
            self._queue.put(None)
        for t in self._threads:
            t.join(timeout=60)
        for w in self._compile_workers:
            w.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ---- stages -------------------------------------------------------------------------------------
    def _compile_then_queue(self, spec: Spec, source: str, backend: str, fut: Future) -> None:
        try:
            worker = getattr(self._compile_local, "worker", None)
            if worker is None:
                # compile workers share the GPU with the timing worker: a small memory share each
                worker = WorkerProcess(self.devices[0], replace(self.config, gpu_memory_fraction=0.2))
                self._compile_local.worker = worker
                with self._lock:
                    self._compile_workers.append(worker)
            job = make_job(spec, source, backend, self.devices[0], self.config, "compile")
            result = worker.run(job, self.config.timeout_s)
            if result.get("status") != "passed":
                worker.close()  # fresh process for the next compile
                result.setdefault("diagnostics", {})["stage"] = "compile"
                fut.set_result(build_verdict(result, spec, source, backend, self.devices[0], self.config,
                                             self.peaks, {}))
                return
            self._queue.put((spec, source, backend, fut))
        except BaseException as exc:  # noqa: BLE001 - never leave a Future unresolved
            fut.set_exception(exc)

    def _profile_for(self, workers: _Workers, spec: Spec, device: str) -> dict:
        key = (spec.sha256, device)
        with self._lock:
            if key in self._profiles:
                return self._profiles[key]
        if workers.current.jobs_done:
            workers.replace()  # baselines are measured in a fresh process, before any candidate ran in it
        job = make_job(spec, None, "torch", device, self.config, "profile", peaks=self.peaks)
        result = workers.current.run(job, self.config.timeout_s)
        if result.get("status") != "passed":
            workers.replace()
            raise RuntimeError(f"profiling spec {spec.path} on {device} failed: {result.get('reasons')}")
        with self._lock:
            self._profiles[key] = result["profile"]
        return result["profile"]

    def _device_loop(self, device: str) -> None:
        workers = _Workers(device, self.config)
        while True:
            item = self._queue.get()
            if item is None:
                break
            spec, source, backend, fut = item
            try:
                profile = self._profile_for(workers, spec, device)
                if source is None:
                    fut.set_result(profile)
                    continue
                job = make_job(spec, source, backend, device, self.config, "full", profile=profile,
                               peaks=self.peaks)
                result = workers.current.run(job, self.config.timeout_s)
                verdict = build_verdict(result, spec, source, backend, device, self.config, self.peaks, profile)
                if verdict.status is not Status.passed or result.get("poisoned"):
                    workers.replace()
                    self.restarts += 1
                fut.set_result(verdict)
            except BaseException as exc:  # noqa: BLE001 - resolve the Future whatever happened
                workers.replace()
                fut.set_exception(exc)
        workers.close()


class _Workers:
    """The device's current worker plus a spare started in the background, so a restart costs no wait."""

    def __init__(self, device: str, config: EvalConfig) -> None:
        self.device, self.config = device, config
        self.current = WorkerProcess(device, config)
        self._spare, self._starter = self._spawn()

    def _spawn(self) -> tuple[WorkerProcess, threading.Thread]:
        spare = WorkerProcess(self.device, self.config)
        starter = threading.Thread(target=self._start_quietly, args=(spare,), daemon=True)
        starter.start()
        return spare, starter

    @staticmethod
    def _start_quietly(worker: WorkerProcess) -> None:
        try:
            worker.start()
        except RuntimeError:
            worker.close()  # run() starts it again and reports the failure there

    def replace(self) -> None:
        self.current.close()
        self._starter.join()
        self.current = self._spare
        self._spare, self._starter = self._spawn()

    def close(self) -> None:
        self.current.close()
        self._starter.join()
        self._spare.close()
