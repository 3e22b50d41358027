"""RayPool: candidate evaluations on a Ray cluster, behind the same interface as the local WorkerPool.

Usage:
    with RayPool("10.0.0.5:6379", config=EvalConfig()) as pool:   # or "auto", "ray://host:10001", "local"
        verdicts = pool.evaluate_many([(spec_path, source, "triton"), ...])

One actor per GPU of the cluster (`num_gpus=1`; on a cluster without GPUs, one per CPU, `num_cpus=1`). Each
actor owns a DeviceRunner (harness/device.py), so a candidate runs in our isolated worker on the actor's
host exactly as in the local pool: same checks, same timing, same verdict. The spec travels as its source
(the hosts need not share a file system); the harness travels with the actors (`py_modules`).
As in the local pool, an actor on a GPU compiles the next candidate (import and one call per variant, in a
worker of its own) while it checks and times the current one, and a spec's baselines are measured once per kind
of device (the first actor of that kind to need them measures; the others wait and receive them).
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
import time
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
# settings a cluster on this host (`local`) hands to its actors: the baseline and Triton caches, the interpreter
LOCAL_SETTINGS = ("KKB_HARNESS_CACHE", "TRITON_CACHE_DIR", "TRITON_INTERPRET")


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


def connect(address: str, num_cpus: int | None = None) -> bool:
    """ray.init for an address; "local" starts a cluster on this machine (num_cpus workers). True when this
    call started a cluster of its own (whoever made it shuts it down)."""
    ray = _ray()
    if address not in ("local", "auto"):
        _probe(address)
    if ray.is_initialized():
        return False
    runtime_env: dict = {"py_modules": [str(HARNESS_DIR)]}
    try:
        if address == "local":  # this host's file system: its caches and settings hold for the actors too
            runtime_env["env_vars"] = {k: v for k, v in os.environ.items() if k in LOCAL_SETTINGS}
            ray.init(num_cpus=num_cpus, include_dashboard=False, log_to_driver=False,
                     runtime_env=runtime_env)
            return True
        ray.init(address=address, log_to_driver=False, runtime_env=runtime_env)
        return False
    except ClusterUnreachable:
        raise
    except Exception as exc:
        raise ClusterUnreachable(f"cannot connect to the Ray cluster at {address!r}: "
                                 f"{type(exc).__name__}: {exc}") from exc


class EvaluatorActor:
    """Runs in a Ray worker process: one device (the GPU Ray gave it, or a CPU) and its DeviceRunner."""

    def __init__(self, device: str, config: dict, peaks: dict | None) -> None:
        import ray

        from harness.device import DeviceRunner

        self.device = device
        self.runner = DeviceRunner(device, EvalConfig.from_dict(config), HardwarePeaks.from_dict(peaks))
        self.specs = Path(tempfile.mkdtemp(prefix="kkb_ray_specs_"))
        self.gpu_ids = [str(g) for g in ray.get_gpu_ids()]  # the host's numbering (Ray masks the others)
        self._compiler = None  # the worker of the compile stage, made on first use
        import torch._dynamo  # noqa: F401 - the footprint's first dispatch mode imports it (seconds): now, not
        # under the first candidate (the local pool's process pays this once for all its devices)

    def info(self) -> dict:
        return {"pid": os.getpid(), "host": socket.gethostname(), "gpu_ids": self.gpu_ids, **self.runner.info}

    def _where(self) -> dict:
        device = f"cuda:{self.gpu_ids[0]}" if self.gpu_ids else self.device
        return {"host": socket.gethostname(), "pid": os.getpid(), "device": device}

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

    def evaluate(self, payload: dict, source: str, backend: str, known: dict | None = None,
                 compiled: bool = False) -> dict:
        """Check and time a candidate (compiled: its compile stage already ran on this actor)."""
        from harness.jobs import precheck

        spec = self._spec(payload)
        self._prime(spec, known)
        early = precheck(spec, source, backend, self.device, self.runner.config)
        verdict = early or self.runner.evaluate(spec, source, backend, first_calls=not compiled)
        return {"verdict": verdict.to_dict(), "baseline": self._baseline(spec), "where": self._where()}

    def compile(self, payload: dict, source: str, backend: str, known: dict | None = None) -> dict:
        """The compile stage (harness/device.py) in this actor's compile worker, beside the evaluation in
        progress: {"verdict": None} when the candidate compiled, else its verdict."""
        from dataclasses import replace

        from harness.jobs import precheck

        spec = self._spec(payload)
        self._prime(spec, known)
        verdict = precheck(spec, source, backend, self.device, self.runner.config)
        if verdict is None:
            if self._compiler is None:  # shares the GPU with the timing worker: its memory cap comes per job
                self._compiler = self.runner.new_worker(replace(self.runner.config, gpu_memory_fraction=0.2))
            verdict = self.runner.compile_stage(spec, source, backend, self._compiler)
        return {"verdict": verdict.to_dict() if verdict is not None else None, "where": self._where()}

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
        if self._compiler is not None:
            self._compiler.close()
        self.runner.close()


class RayPool:
    def __init__(self, address: str, config: EvalConfig | None = None, peaks: HardwarePeaks | None = None,
                 workers: int | None = None, local_cpus: int | None = None, compile_ahead: bool | None = None
                 ) -> None:
        self.address = address
        self.config = config or EvalConfig()
        self.peaks = peaks
        self._ray = _ray()
        self._owns_cluster = connect(address, num_cpus=local_cpus)
        # one actor per GPU (or CPU) free now: a cluster shared with other sessions keeps theirs
        total, free = self._ray.cluster_resources(), self._ray.available_resources()
        if total.get("GPU"):
            self.device, self._options = "cuda:0", {"num_gpus": 1, "num_cpus": 1}
            count = workers or max(1, int(free.get("GPU", 0)))
        else:
            self.device, self._options = "cpu", {"num_cpus": 1}
            count = workers or max(1, int(free.get("CPU", 0)))
        # as the local pool: a compile stage ahead of timing on GPUs (on a CPU it only repeats the first call)
        self.compile_ahead = self.device.startswith("cuda") if compile_ahead is None else compile_ahead
        # threads of an actor: one evaluation, the next candidate's compile stage, info() while both run
        self._options["max_concurrency"] = 3
        self._actor_cls = self._ray.remote(EvaluatorActor)
        self._queue: queue.Queue = queue.Queue()
        # (spec sha256, device name) -> {"key", "profile"}: baselines measured once per kind of device
        self._known: dict[tuple[str, str | None], dict] = {}
        self._gates: dict[tuple[str, str | None], threading.Lock] = {}
        self._lock = threading.Lock()
        self.lost_actors = 0  # actors that died under a candidate and were replaced
        # profiles asked of one actor (measured there, or read from its cache) and handed to the others: once
        # per spec and kind of device
        self.baseline_requests = 0
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

    @property
    def parallelism(self) -> int:
        """Evaluations in flight at once: one timed and one compiling per actor."""
        return len(self._slots) * (2 if self.compile_ahead else 1)

    def _new_actor(self):
        actor = self._actor_cls.options(**self._options).remote(self.device, self.config.to_dict(),
                                                                self.peaks.to_dict() if self.peaks else None)
        return {"actor": actor, "info": None, "busy": None}

    def warm_up(self, timeout_s: float = 300.0) -> float:
        """Wait until every actor has started with its worker (Ray starts them as GPUs are free), at most
        timeout_s: an actor still waiting for a GPU then joins later. The seconds it took."""
        t0 = time.monotonic()
        while not all(slot["info"] is not None for slot in self._slots) and time.monotonic() - t0 < timeout_s:
            time.sleep(0.05)
        return time.monotonic() - t0

    def slots(self) -> list[dict]:
        """Each started actor's process id, host, GPUs and what it runs now (spec name or None)."""
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

    def submit_profile(self, spec_path: str | Path) -> Future:
        fut: Future = Future()
        self._queue.put((load_spec(spec_path), None, "torch", fut, 1))
        return fut

    def profile(self, spec_path: str | Path) -> dict:
        return self.submit_profile(spec_path).result()

    def check_fits(self, spec_path: str | Path) -> dict:
        """The spec's footprint estimate on one actor's device; SpecTooLarge when it cannot fit there."""
        spec = load_spec(spec_path)
        try:
            return self._ray.get(self._slots[0]["actor"].check_fits.remote(self._payload(spec)))
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
        if self._owns_cluster:  # `local`: the cluster this pool started goes with it
            self._ray.shutdown()

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
    @staticmethod
    def _payload(spec: Spec) -> dict:
        return {"name": spec.name, "sha256": spec.sha256, "source": spec.source}

    def _baseline_for(self, slot: dict, spec: Spec) -> dict:
        """The spec's baselines on the slot's kind of device: known, or measured now by this slot's actor
        while any other slot needing them waits (so each spec is profiled once per kind of device)."""
        kind = (spec.sha256, (slot["info"] or {}).get("device_name"))
        with self._lock:
            known = self._known.get(kind)
            gate = self._gates.setdefault(kind, threading.Lock())
        if known is not None:
            return known
        with gate:
            with self._lock:
                known = self._known.get(kind)
            if known is None:
                answer = self._ray.get(slot["actor"].profile.remote(self._payload(spec), None))
                known = answer["baseline"] or {"key": None, "profile": answer["profile"]}
                with self._lock:
                    self._known[kind] = known
                    self.baseline_requests += 1
        return known

    def _take_next(self, slot: dict):
        """The next candidate for this slot, its compile stage started on the slot's actor: (item, ref), or
        (item, None) for a profile; None when nothing waits."""
        try:
            item = self._queue.get_nowait()
        except queue.Empty:
            return None
        if item is None:  # the closing sentinel: left for the loop
            self._queue.put(None)
            return None
        spec, source, backend, fut, attempt = item
        if attempt == 1 and not fut.set_running_or_notify_cancel():
            return None
        if source is None:
            return item, None
        try:
            known = self._baseline_for(slot, spec)
        except (self._ray.exceptions.RayActorError, self._ray.exceptions.WorkerCrashedError,
                self._ray.exceptions.ObjectLostError) as exc:
            self._lost(item, exc)  # the actor is gone: another takes it
            raise
        except BaseException as exc:  # noqa: BLE001 - its baselines failed (ProfileError...): its answer
            self._fail(fut, exc, self._ray.exceptions.RayTaskError)
            return None
        return item, slot["actor"].compile.remote(self._payload(spec), source, backend, known)

    def _resolve(self, item: tuple, answer: dict, index: int, compiled: bool = False) -> None:
        fut, attempt = item[3], item[4]
        data = answer["verdict"]
        where = answer.get("where") or {}
        data["diagnostics"] = {**(data.get("diagnostics") or {}),
                               "ray": {"attempts": attempt, **where},
                               "where": {"executor": "ray", "host": where.get("host"),
                                         "device": where.get("device"), "worker": index,
                                         "compiled_ahead": compiled}}
        fut.set_result(Verdict.from_dict(data))

    def _lost(self, item: tuple, exc: BaseException) -> None:
        """The actor died under `item`: run it again elsewhere (at most MAX_ATTEMPTS runs in all)."""
        spec, source, backend, fut, attempt = item
        if self._stopped:
            fut.set_exception(HarnessStopped(f"stopped while {spec.name} ran on the Ray cluster"))
        elif attempt >= MAX_ATTEMPTS:
            fut.set_exception(RuntimeError(
                f"spec {spec.path}: a Ray worker was lost {attempt} times under this candidate "
                f"(last: {type(exc).__name__}: {str(exc)[:300]})"))
        else:
            self._queue.put((spec, source, backend, fut, attempt + 1))

    @staticmethod
    def _fail(fut: Future, exc: BaseException, task_error: type) -> None:
        if isinstance(exc, task_error):  # the actor raised: SpecTooLarge, ProfileError...
            cause = getattr(exc, "cause", None)
            exc = cause if isinstance(cause, BaseException) else RuntimeError(str(exc))
        fut.set_exception(exc)

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
        task_error = self._ray.exceptions.RayTaskError
        following = None  # (item, compile ref or None) taken while the previous candidate was evaluated
        while True:
            if self._slots[index]["info"] is None and not self._ready(index):
                if self._stopped or self._closing:
                    if following is not None:
                        following[0][3].set_exception(HarnessStopped("stopped before it ran on the Ray cluster"))
                    return
                self._slots[index] = self._new_actor()
                continue
            slot = self._slots[index]
            compiled = False
            if following is not None:
                item, compile_ref = following
                following = None
                if compile_ref is not None:
                    try:
                        done = self._ray.get(compile_ref)
                    except ray_errors as exc:
                        if self._stopped:
                            item[3].set_exception(HarnessStopped(f"stopped while {item[0].name} ran on the Ray "
                                                                 "cluster"))
                            break
                        self._replace(index)
                        self._lost(item, exc)
                        continue
                    except BaseException as exc:  # noqa: BLE001 - resolve the Future whatever happened
                        self._fail(item[3], exc, task_error)
                        continue
                    if done["verdict"] is not None:  # failed to compile: that is its verdict
                        self._resolve(item, done, index)
                        continue
                    compiled = True
            else:
                item = self._queue.get()
                if item is None:
                    break
                if item[4] == 1 and not item[3].set_running_or_notify_cancel():
                    continue
            spec, source, backend, fut, _ = item
            slot["busy"] = spec.name
            try:
                known = self._baseline_for(slot, spec)
                if source is None:
                    fut.set_result(known["profile"])
                    continue
                ref = slot["actor"].evaluate.remote(self._payload(spec), source, backend, known, compiled)
                if self.compile_ahead and not self._closing:
                    following = self._take_next(slot)
                self._resolve(item, self._ray.get(ref), index, compiled)
            except ray_errors as exc:
                # the actor died: the candidate it evaluated and the one it compiled run again elsewhere
                lost = [item] + ([following[0]] if following is not None else [])
                following = None
                if self._stopped:
                    for each in lost:
                        each[3].set_exception(HarnessStopped(f"stopped while {each[0].name} ran on the Ray "
                                                             "cluster"))
                    break
                self._replace(index)
                for each in lost:
                    self._lost(each, exc)
            except BaseException as exc:  # noqa: BLE001 - resolve the Future whatever happened
                self._fail(fut, exc, task_error)
            finally:
                slot["busy"] = None

    def _replace(self, index: int) -> None:
        with self._lock:
            self.lost_actors += 1
        self._ray.kill(self._slots[index]["actor"])  # if only unreachable, it must not come back with the candidate
        self._slots[index] = self._new_actor()  # Ray places it wherever a GPU (or CPU) is free
