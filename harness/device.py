"""One device's evaluations, in the process that owns the device: the local pool's device thread, or a Ray
actor on a cluster host. Every executor judges a candidate through this class, so a verdict does not
depend on where it was computed.

Usage:
    runner = DeviceRunner("cuda:0", EvalConfig())
    verdict = runner.evaluate(load_spec(path), source, "triton")
    runner.close()

For each candidate: the spec's footprint is estimated (harness/memory.py) and a spec too large for the
device is refused before anything runs; the spec's baselines come from the cache or are measured once in
a fresh worker alone on the device (harness/baselines.py); the candidate's time limit follows from them
(harness/limits.py); the evaluation holds its share of the device's memory (its worker is capped to it)
while it runs; an out-of-memory error is retried once alone on the device, and if it recurs the verdict
says whose allocation failed. A worker is replaced (from a ready spare) after any verdict but passed.
"""

from __future__ import annotations

import threading
import time
import weakref

from harness.baselines import BaselineCache, baseline_key
from harness.config import EvalConfig, HardwarePeaks
from harness.jobs import build_verdict, make_job
from harness.limits import candidate_timeout_s
from harness.memory import (
    GIB,
    DeviceBudget,
    Footprint,
    SpecTooLarge,
    cap_for,
    device_capacity_bytes,
    estimate_footprint,
    too_large_message,
)
from harness.process import HarnessStopped, WorkerProcess, stopping
from harness.spec import Spec
from harness.verdict import Status, Verdict


class ProfileError(RuntimeError):
    """The reference itself failed on the device (not a candidate's fault); the message names the spec."""


class Workers:
    """A device's current worker plus, optionally, a spare started in the background (a restart costs no
    wait)."""

    def __init__(self, new_worker, spare: bool = True) -> None:
        self.new_worker = new_worker  # () -> WorkerProcess, owned by the runner
        self.current = new_worker()
        self._spare: WorkerProcess | None = None
        self._starter: threading.Thread | None = None
        if spare:
            self._spare, self._starter = self._spawn()

    def _spawn(self) -> tuple[WorkerProcess, threading.Thread]:
        spare = self.new_worker()
        starter = threading.Thread(target=self._start_quietly, args=(spare,), daemon=True)
        starter.start()
        return spare, starter

    @staticmethod
    def _start_quietly(worker: WorkerProcess) -> None:
        try:
            worker.start()
        except RuntimeError:
            worker.close()  # run() starts it again and reports the failure there

    def ensure_started(self) -> WorkerProcess:
        if not self.current.alive:
            self.current.start()
        return self.current

    def replace(self) -> None:
        self.current.close()
        if self._starter is None or self._spare is None:
            self.current = self.new_worker()
            return
        self._starter.join()
        self.current = self._spare
        self._spare, self._starter = self._spawn()

    def close(self) -> None:
        self.current.close()
        if self._starter is not None:
            self._starter.join()
        if self._spare is not None:
            self._spare.close()


class DeviceRunner:
    def __init__(self, device: str, config: EvalConfig, peaks: HardwarePeaks | None = None,
                 baselines: BaselineCache | None = None, spare: bool = True) -> None:
        self.device, self.config, self.peaks = device, config, peaks
        self.baselines = baselines if baselines is not None else BaselineCache()
        self.stop_event = threading.Event()
        self._owned: weakref.WeakSet[WorkerProcess] = weakref.WeakSet()
        self._lock = threading.Lock()
        self.workers = Workers(self.new_worker, spare=spare)
        self.restarts = 0  # workers replaced after a verdict other than passed
        self._budget: DeviceBudget | None = None
        self._budget_of: DeviceRunner | None = None  # another runner on the same device, whose budget is shared
        self._info: dict = {}
        self._footprints: dict[str, Footprint] = {}
        self.compile_seconds: dict[tuple[str, str], float] = {}  # a compile stage's time, until its evaluation

    # ---- workers ------------------------------------------------------------------------------------
    def new_worker(self, config: EvalConfig | None = None) -> WorkerProcess:
        """A worker process on this device that `stop()` kills (not started yet)."""
        worker = WorkerProcess(self.device, config or self.config, self.stop_event)
        with self._lock:
            self._owned.add(worker)
        return worker

    def stopped(self) -> bool:
        return self.stop_event.is_set() or stopping()

    def stop(self) -> None:
        """Stop now: every worker of this runner is killed, none starts again, and the evaluations in
        flight end with HarnessStopped."""
        self.stop_event.set()
        with self._lock:
            owned = list(self._owned)
        for worker in owned:
            worker.kill()

    # ---- the device ---------------------------------------------------------------------------------
    @property
    def info(self) -> dict:
        """The device's name, memory and software versions, from a worker's ready message."""
        with self._lock:
            if not self._info:
                self._info = dict(self.workers.ensure_started().info)
            return self._info

    @property
    def budget(self) -> DeviceBudget:
        if self._budget_of is not None:
            return self._budget_of.budget
        info = self.info
        with self._lock:
            if self._budget is None:
                capacity = device_capacity_bytes(info, self.config)
                if info.get("free_bytes"):  # another process on the GPU already holds some of it
                    capacity = min(capacity, int(info["free_bytes"]))
                self._budget = DeviceBudget(self.device, capacity)
            return self._budget

    def use_budget(self, budget: DeviceBudget) -> None:
        """Hand out this budget instead of the device's own (a GPU shared with other work; tests)."""
        with self._lock:
            self._budget, self._budget_of = budget, None

    def share_budget_with(self, other: DeviceRunner) -> None:
        """Use `other`'s budget: two runners on one device (a pool given `cuda:0,cuda:0`)."""
        self._budget_of = other

    def footprint(self, spec: Spec) -> Footprint:
        with self._lock:
            found = self._footprints.get(spec.sha256)
        if found is None:
            found = estimate_footprint(spec, self.config, self.device)
            with self._lock:
                self._footprints[spec.sha256] = found
        return found

    def check_fits(self, spec: Spec) -> Footprint:
        """The spec's footprint; SpecTooLarge, with the estimate, when one evaluation cannot fit."""
        footprint = self.footprint(spec)
        capacity = self.budget.capacity_bytes
        if footprint.method == "meta" and footprint.needed_bytes > capacity:
            from harness.fitting import sizes_that_fit

            smaller = sizes_that_fit(spec, self.config, self.device, capacity)
            raise SpecTooLarge(too_large_message(spec, footprint, self.device, capacity, smaller))
        return footprint

    def share_for(self, spec: Spec, compile_stage: bool = False) -> int:
        """Bytes of the device budget one evaluation (or compile stage) of `spec` holds while it runs."""
        footprint = self.check_fits(spec)
        capacity = self.budget.capacity_bytes
        if footprint.method != "meta":
            return capacity  # unknown size: alone on the device
        wanted = footprint.compile_bytes if compile_stage else footprint.evaluation_bytes
        return cap_for(wanted, self.config, capacity) if self.device.startswith("cuda") else wanted

    # ---- baselines ----------------------------------------------------------------------------------
    def profile(self, spec: Spec) -> dict:
        """The spec's baselines on this kind of device: cached, or measured once alone on the device."""
        need_bw = self.device.startswith("cuda") and (self.peaks is None
                                                      or self.peaks.memory_bandwidth_bytes_per_s is None)
        key = baseline_key(spec, self.info, self.config, need_bw)
        found = self.baselines.get(key)
        if found is not None:
            return found
        with self.baselines.lock_for(key):
            found = self.baselines.get(key)
            if found is not None:
                return found
            self.check_fits(spec)
            with self.budget.hold_all() as cap:
                worker = self.new_worker()  # fresh: no candidate ever ran in it
                try:
                    job = make_job(spec, None, "torch", self.device, self.config, "profile", peaks=self.peaks)
                    job.update(one_shot=True, memory_cap_bytes=cap)
                    result = worker.run(job, self.config.profile_timeout_s)
                finally:
                    worker.close()
            if self.stopped():
                raise HarnessStopped(f"stopped while profiling {spec.path} on {self.device}")
            if result.get("status") != "passed":
                tail = (result.get("diagnostics") or {}).get("worker_log_tail", "")[-800:]
                raise ProfileError(f"profiling spec {spec.path} on {self.device} failed: "
                                   f"{'; '.join(map(str, result.get('reasons') or ['no reason given']))}"
                                   f"{' ' + tail if tail else ''}")
            profile = dict(result["profile"], memory=result.get("memory"))
            about = {"spec": str(spec.path), "device": self.device, **self.info}
            return self.baselines.put(key, profile, about)

    # ---- candidates ---------------------------------------------------------------------------------
    def _run(self, job: dict, cap: int, limit_s: float) -> dict:
        job = dict(job, memory_cap_bytes=cap)
        return self.workers.current.run(job, limit_s)

    def evaluate(self, spec: Spec, source: str, backend: str, first_calls: bool = True) -> Verdict:
        """Judge one candidate on this device (static checks are the caller's, before it gets here)."""
        t0 = time.monotonic()
        share = self.share_for(spec)
        footprint = self.footprint(spec)
        profile = self.profile(spec)
        limit_s, how = candidate_timeout_s(self.config, profile, self.device, first_calls)
        job = make_job(spec, source, backend, self.device, self.config, "full", profile=profile, peaks=self.peaks)
        with self.budget.hold(share) as cap:
            result = self._run(job, cap, limit_s)
        attempts = 1
        if result.get("oom") and not self.stopped():  # once more, alone on the device, in a fresh worker
            self.workers.replace()
            with self.budget.hold_all() as cap:
                result = self._run(job, cap, limit_s)
            attempts = 2
        if self.stopped():
            raise HarnessStopped(f"stopped while evaluating a candidate of {spec.path} on {self.device}")
        diag = result.setdefault("diagnostics", {})
        diag["time_limit_s"], diag["time_limit"] = round(limit_s, 1), how
        # seconds to the verdict: the compile stage, baselines and waiting for memory included
        compiled_s = self.compile_seconds.pop((spec.sha256, source), 0.0)
        diag["evaluation_s"] = round(time.monotonic() - t0 + compiled_s, 3)
        diag["memory"] = {**footprint.to_dict(), "cap_bytes": cap, **(result.get("memory") or {})}
        if result.get("oom"):
            owner = result["oom"]
            diag["oom"] = {"owner": owner, "attempts": attempts}
            whose = "the candidate's" if owner == "candidate" else "the harness's own (not the candidate's fault)"
            result.setdefault("reasons", []).append(
                f"out of memory again when retried alone on {self.device} with {cap / GIB:.1f} GiB: "
                f"{whose} allocation failed (estimated footprint {footprint.evaluation_bytes / GIB:.2f} GiB)")
        verdict = build_verdict(result, spec, source, backend, self.device, self.config, self.peaks, profile)
        if verdict.status is not Status.passed or result.get("poisoned"):
            self.workers.replace()
            self.restarts += 1
        return verdict

    def compile_stage(self, spec: Spec, source: str, backend: str, worker: WorkerProcess) -> Verdict | None:
        """Import the candidate and call it once per variant in `worker` (fills the Triton and extension
        caches); a Verdict when that fails, else None."""
        t0 = time.monotonic()
        share = self.share_for(spec, compile_stage=True)
        profile = self.profile(spec)
        limit_s, how = candidate_timeout_s(self.config, profile, self.device, first_calls=True)
        job = make_job(spec, source, backend, self.device, self.config, "compile")
        with self.budget.hold(share) as cap:
            result = worker.run(dict(job, memory_cap_bytes=cap), limit_s)
        if self.stopped():
            raise HarnessStopped(f"stopped while compiling a candidate of {spec.path} on {self.device}")
        if result.get("status") == "passed":
            self.compile_seconds[(spec.sha256, source)] = round(time.monotonic() - t0, 3)
            return None
        worker.close()  # a fresh process for the next compile
        if result.get("oom"):
            return None  # judged by the evaluation itself, which retries it alone on the device
        diag = result.setdefault("diagnostics", {})
        diag["stage"], diag["time_limit_s"], diag["time_limit"] = "compile", round(limit_s, 1), how
        return build_verdict(result, spec, source, backend, self.device, self.config, self.peaks, {})

    def close(self) -> None:
        self.workers.close()
