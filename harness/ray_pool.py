"""RayPool: candidate evaluations on a Ray cluster, behind the same interface as the local WorkerPool.

Usage:
    with RayPool("10.0.0.5:6379", config=EvalConfig()) as pool:   # or "auto", "ray://host:10001", "local"
        verdicts = pool.evaluate_many([(spec_path, source, "triton"), ...])

One actor per GPU of the cluster (`num_gpus=1`; on a cluster without GPUs, one per CPU, `num_cpus=1`). Each
actor owns a DeviceRunner (harness/device.py), so a candidate runs in our isolated worker on the actor's
host exactly as in the local pool: same checks, same timing, same verdict. The spec travels as its source
(the hosts need not share a file system); the harness travels with the actors (`py_modules`).
An actor lost mid-candidate (its host went down, its process was killed) is replaced and the candidate is
run again on whichever actor is free: its Future resolves once, with the verdict of the run that finished
(`diagnostics["ray"]["attempts"]` says how many it took). `ray` is imported only here, when a RayPool is
made; an address that cannot be reached is an error naming it (the local pool is used only when asked).
"""

from __future__ import annotations

import os
import queue
import socket
import tempfile
import threading
from concurrent.futures import Future
from pathlib import Path
from typing import Self

from harness.baselines import BaselineCache
from harness.config import EvalConfig, HardwarePeaks
from harness.process import HarnessStopped
from harness.spec import Spec, load_spec
from harness.verdict import Verdict

HARNESS_DIR = Path(__file__).resolve().parent
MAX_ATTEMPTS = 3  # runs of one candidate before its loss is reported as an error
CONNECT_TIMEOUT_S = 10.0


class ClusterUnreachable(ConnectionError):
    """The Ray cluster at the given address cannot be reached; the message names the address."""


def _ray():
    try:
        import ray
    except ImportError as exc:
        raise ClusterUnreachable("--ray needs the `ray` package: pip install 'kernelkb[cluster]'") from exc
    return ray


def _probe(address: str) -> None:
    """A TCP connection to host:port, so a wrong address fails in seconds with its name."""
    hostport = address.removeprefix("ray://")
    host, _, port = hostport.rpartition(":")
    if not host or not port.isdigit():
        raise ClusterUnreachable(f"Ray address {address!r}: expected HOST:PORT, ray://HOST:PORT, auto or local")
    try:
        with socket.create_connection((host, int(port)), timeout=CONNECT_TIMEOUT_S):
            pass
    except OSError as exc:
        raise ClusterUnreachable(f"cannot reach the Ray cluster at {address!r}: {exc}") from exc


def connect(address: str, num_cpus: int | None = None) -> None:
    """ray.init for an address; "local" starts a cluster on this machine (num_cpus workers)."""
    ray = _ray()
    if address not in ("local", "auto"):
        _probe(address)
    if ray.is_initialized():
        return
    runtime_env = {"py_modules": [str(HARNESS_DIR)]}
    try:
        if address == "local":
            ray.init(num_cpus=num_cpus, include_dashboard=False, log_to_driver=False,
                     runtime_env=runtime_env)
            return
        ray.init(address=address, log_to_driver=False, runtime_env=runtime_env)
    except ClusterUnreachable:
        raise
    except Exception as exc:
        raise ClusterUnreachable(f"cannot connect to the Ray cluster at {address!r}: "
                                 f"{type(exc).__name__}: {exc}") from exc


class EvaluatorActor:
    """Runs in a Ray worker process: one device (the GPU Ray gave it, or a CPU) and its DeviceRunner."""

    def __init__(self, device: str, config: dict, peaks: dict | None) -> None:
        from harness.device import DeviceRunner

        self.device = device
        self.runner = DeviceRunner(device, EvalConfig.from_dict(config), HardwarePeaks.from_dict(peaks))
        self.specs = Path(tempfile.mkdtemp(prefix="kkb_ray_specs_"))

    def info(self) -> dict:
        return {"pid": os.getpid(), "host": socket.gethostname(), **self.runner.info}

    def _spec(self, payload: dict) -> Spec:
        folder = self.specs / payload["sha256"]
        folder.mkdir(exist_ok=True)
        path = folder / f"{payload['name']}.py"
        if not path.is_file():
            path.write_text(payload["source"])
        return load_spec(path)

    def _prime(self, spec: Spec, known: dict | None) -> None:
        if known:
            self.runner.baselines.put(known["key"], known["profile"])

    def evaluate(self, payload: dict, source: str, backend: str, known: dict | None = None) -> dict:
        from harness.jobs import precheck

        spec = self._spec(payload)
        self._prime(spec, known)
        early = precheck(spec, source, backend, self.device, self.runner.config)
        verdict = early or self.runner.evaluate(spec, source, backend)
        return {"verdict": verdict.to_dict(), "baseline": self._baseline(spec),
                "where": {"host": socket.gethostname(), "pid": os.getpid()}}

    def check_fits(self, payload: dict) -> dict:
        return self.runner.check_fits(self._spec(payload)).to_dict()

    def profile(self, payload: dict, known: dict | None = None) -> dict:
        spec = self._spec(payload)
        self._prime(spec, known)
        return {"profile": self.runner.profile(spec), "baseline": self._baseline(spec)}

    def _baseline(self, spec: Spec) -> dict | None:
        key = self._key(spec)
        profile = self.runner.baselines.get(key)
        return {"key": key, "profile": profile} if profile is not None else None

    def _key(self, spec: Spec) -> str:
        from harness.baselines import baseline_key

        runner = self.runner
        need_bw = self.device.startswith("cuda") and (runner.peaks is None
                                                      or runner.peaks.memory_bandwidth_bytes_per_s is None)
        return baseline_key(spec, runner.info, runner.config, need_bw)

    def close(self) -> None:
        self.runner.close()


class RayPool:
    def __init__(self, address: str, config: EvalConfig | None = None, peaks: HardwarePeaks | None = None,
                 workers: int | None = None, local_cpus: int | None = None) -> None:
        self.address = address
        self.config = config or EvalConfig()
        self.peaks = peaks
        self._ray = _ray()
        connect(address, num_cpus=local_cpus)
        # one actor per GPU (or CPU) free now: a cluster shared with other sessions keeps theirs
        total, free = self._ray.cluster_resources(), self._ray.available_resources()
        if total.get("GPU"):
            self.device, self._options = "cuda:0", {"num_gpus": 1, "num_cpus": 1}
            count = workers or max(1, int(free.get("GPU", 0)))
        else:
            self.device, self._options = "cpu", {"num_cpus": 1}
            count = workers or max(1, int(free.get("CPU", 0)))
        # a second thread answers info() while a candidate runs; the pool sends one evaluation at a time
        self._options["max_concurrency"] = 2
        self._actor_cls = self._ray.remote(EvaluatorActor)
        self._queue: queue.Queue = queue.Queue()
        self._known: dict[str, dict] = {}  # spec sha256 -> {"key", "profile"} returned by an actor
        self._lock = threading.Lock()
        self.lost_actors = 0  # actors that died under a candidate and were replaced
        self.baselines = BaselineCache(use_disk=False)
        self._stopped = self._closing = False
        self._slots = [self._new_actor() for _ in range(count)]
        self._threads = [threading.Thread(target=self._slot_loop, args=(i,), daemon=True, name=f"kkb-ray-{i}")
                         for i in range(count)]
        for t in self._threads:
            t.start()

    @property
    def restarts(self) -> int:
        return self.lost_actors

    def _new_actor(self):
        actor = self._actor_cls.options(**self._options).remote(self.device, self.config.to_dict(),
                                                                self.peaks.to_dict() if self.peaks else None)
        return {"actor": actor, "info": None, "busy": None}

    def slots(self) -> list[dict]:
        """Each started actor's process id, host and what it runs now (spec name or None)."""
        return [{**slot["info"], "busy": slot["busy"]} for slot in self._slots if slot["info"] is not None]

    # ---- public: the WorkerPool interface ------------------------------------------------------------
    def submit(self, spec_path: str | Path, source: str, backend: str = "triton") -> Future:
        spec = load_spec(spec_path)
        fut: Future = Future()
        self._queue.put((spec, source, backend, fut, 1))
        return fut

    def evaluate(self, spec_path: str | Path, source: str, backend: str = "triton") -> Verdict:
        return self.submit(spec_path, source, backend).result()

    def evaluate_many(self, tasks: list) -> list[Verdict]:
        futures = [self.submit(*task) for task in tasks]
        return [f.result() for f in futures]

    def profile(self, spec_path: str | Path) -> dict:
        fut: Future = Future()
        self._queue.put((load_spec(spec_path), None, "torch", fut, 1))
        return fut.result()

    def check_fits(self, spec_path: str | Path) -> dict:
        """The spec's footprint estimate on one actor's device; SpecTooLarge when it cannot fit there."""
        spec = load_spec(spec_path)
        payload = {"name": spec.name, "sha256": spec.sha256, "source": spec.source}
        try:
            return self._ray.get(self._slots[0]["actor"].check_fits.remote(payload))
        except self._ray.exceptions.RayTaskError as exc:
            cause = getattr(exc, "cause", None)
            raise cause if isinstance(cause, BaseException) else RuntimeError(str(exc)) from exc

    def cancel_pending(self) -> int:
        n = 0
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return n
            if item is None:
                self._queue.put(None)
                return n
            item[3].cancel()
            n += 1

    def close(self) -> None:
        self._closing = True
        for _ in self._threads:
            self._queue.put(None)
        for index, thread in enumerate(self._threads):
            if self._slots[index]["info"] is None:  # never started (no free GPU): nothing to wait for
                self._ray.kill(self._slots[index]["actor"])
            thread.join(timeout=60)
        for slot in self._slots:
            if slot["info"] is not None:
                try:
                    self._ray.get(slot["actor"].close.remote(), timeout=30)
                except Exception:  # noqa: BLE001, S110 - an actor already gone has nothing to close
                    pass
            self._ray.kill(slot["actor"])

    def terminate(self) -> None:
        """Stop now: every actor is killed (its workers die with its fork server); Futures end stopped."""
        self._stopped = True
        self.cancel_pending()
        for slot in self._slots:
            self._ray.kill(slot["actor"])
        for _ in self._threads:
            self._queue.put(None)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type, *exc) -> None:
        if exc_type is not None and issubclass(exc_type, (KeyboardInterrupt, SystemExit)):
            self.terminate()
        else:
            self.close()

    # ---- slots --------------------------------------------------------------------------------------
    def _call(self, slot: dict, spec: Spec, source: str | None, backend: str) -> dict:
        payload = {"name": spec.name, "sha256": spec.sha256, "source": spec.source}
        with self._lock:
            known = self._known.get(spec.sha256)
        actor = slot["actor"]
        ref = (actor.profile.remote(payload, known) if source is None
               else actor.evaluate.remote(payload, source, backend, known))
        answer = self._ray.get(ref)
        if answer.get("baseline"):
            with self._lock:
                self._known[spec.sha256] = answer["baseline"]
        return answer

    def _ready(self, index: int) -> bool:
        """Wait for the slot's actor to start (Ray schedules it when a GPU or CPU is free); False if it died."""
        slot = self._slots[index]
        try:
            slot["info"] = self._ray.get(slot["actor"].info.remote())
            return True
        except Exception:  # noqa: BLE001 - killed before it started (the pool closing), or its host is gone
            return False

    def _slot_loop(self, index: int) -> None:
        ray_errors = (self._ray.exceptions.RayActorError, self._ray.exceptions.WorkerCrashedError,
                      self._ray.exceptions.ObjectLostError)
        while True:
            if self._slots[index]["info"] is None and not self._ready(index):
                if self._stopped or self._closing:
                    return
                self._slots[index] = self._new_actor()
                continue
            item = self._queue.get()
            if item is None:
                break
            spec, source, backend, fut, attempt = item
            if attempt == 1 and not fut.set_running_or_notify_cancel():
                continue
            slot = self._slots[index]
            slot["busy"] = spec.name
            try:
                answer = self._call(slot, spec, source, backend)
                if source is None:
                    fut.set_result(answer["profile"])
                else:
                    data = answer["verdict"]
                    data["diagnostics"] = {**(data.get("diagnostics") or {}),
                                           "ray": {"attempts": attempt, **answer.get("where", {})}}
                    fut.set_result(Verdict.from_dict(data))
            except ray_errors as exc:
                if self._stopped:
                    fut.set_exception(HarnessStopped(f"stopped while {spec.name} ran on the Ray cluster"))
                    break
                with self._lock:
                    self.lost_actors += 1
                self._ray.kill(slot["actor"])  # if only unreachable, it must not come back with the candidate
                self._slots[index] = self._new_actor()  # Ray places it wherever a GPU (or CPU) is free
                if attempt >= MAX_ATTEMPTS:
                    fut.set_exception(RuntimeError(
                        f"spec {spec.path}: a Ray worker was lost {attempt} times under this candidate "
                        f"(last: {type(exc).__name__}: {str(exc)[:300]})"))
                else:
                    self._queue.put((spec, source, backend, fut, attempt + 1))
            except self._ray.exceptions.RayTaskError as exc:  # the actor raised: SpecTooLarge, ProfileError...
                cause = getattr(exc, "cause", None)
                fut.set_exception(cause if isinstance(cause, BaseException) else RuntimeError(str(exc)))
            except BaseException as exc:  # noqa: BLE001 - resolve the Future whatever happened
                fut.set_exception(exc)
            finally:
                self._slots[index]["busy"] = None
