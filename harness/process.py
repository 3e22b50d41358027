"""One worker process seen from the parent: start, send a job, wait with a timeout, classify its death.

Usage: w = WorkerProcess("cpu", config); result = w.run(job, timeout_s=60); w.close()

A worker is forked by the device's fork server (harness/zygote.py: torch already imported, so a fresh
worker per failure is cheap) or, with EvalConfig(fork_server=False), started as `python -m harness.worker`.
Either way it runs in its own session (a hang or forked children are killed as a group), its stdout/stderr
go to a log file that is never parsed (results come on the private socket), and it has each backend's
environment (e.g. TRITON_INTERPRET=1 on CPU) from before torch/triton were imported.
"""

from __future__ import annotations

import atexit
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from multiprocessing.connection import Connection
from pathlib import Path

from harness.backends import worker_env
from harness.config import EvalConfig

HARNESS_ROOT = Path(__file__).resolve().parent.parent
STARTUP_TIMEOUT_S = 180.0  # importing torch on a loaded 2-core machine can take a while


def _env(device: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(worker_env(device))
    env["PYTHONPATH"] = os.pathsep.join([str(HARNESS_ROOT)] + [p for p in [env.get("PYTHONPATH")] if p])
    env["PYTHONUNBUFFERED"] = "1"
    return env


def _signal_name(code: int) -> str:
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


class ForkServer:
    """Client of one harness.zygote process (one per device)."""

    def __init__(self, device: str) -> None:
        self.device = device
        self._lock = threading.Lock()
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        log = Path(tempfile.gettempdir()) / f"kkb_zygote_{os.getpid()}_{device.replace(':', '')}.log"
        with open(log, "ab") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "harness.zygote", "--ctl-fd", str(theirs.fileno()), "--device", device],
                pass_fds=(theirs.fileno(),), env={**_env(device), "PYTORCH_NVML_BASED_CUDA_CHECK": "1"}, cwd=tempfile.gettempdir(), stdout=out,
                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        theirs.close()
        self.sock = ours
        self.sock.settimeout(STARTUP_TIMEOUT_S)
        try:
            json.loads(self.sock.recv(65536))
        except (OSError, ValueError) as exc:
            self.close()
            raise RuntimeError(f"harness fork server for {device} did not start ({exc}); see {log}") from exc
        self.sock.settimeout(None)

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def _ask(self, message: dict, fds: list[int] = ()) -> dict:
        with self._lock:
            self.sock.settimeout(120.0)  # a wedged fork server is an error, not a hang
            socket.send_fds(self.sock, [json.dumps(message).encode()], list(fds))
            data = self.sock.recv(65536)
        if not data:
            raise RuntimeError(f"harness fork server for {self.device} went away")
        return json.loads(data)

    def fork(self, fd: int, log: Path, config: EvalConfig) -> int:
        return int(self._ask({"op": "fork", "log": str(log), "cpu_memory_bytes": config.cpu_memory_limit_bytes,
                              "gpu_memory_fraction": config.gpu_memory_fraction}, [fd])["pid"])

    def wait(self, pid: int, timeout_s: float) -> int | None:
        return self._ask({"op": "wait", "pid": pid, "timeout_s": timeout_s})["returncode"]

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass


_SERVERS: dict[str, ForkServer] = {}
FORK_BROKEN: dict[str, str] = {}  # device -> why forked workers failed there (then workers are spawned)
_SERVERS_LOCK = threading.Lock()
_LIVE: weakref.WeakSet[WorkerProcess] = weakref.WeakSet()  # workers started by this process, not closed
_LIVE_LOCK = threading.Lock()
_STOPPING = threading.Event()  # set by kill_all(): no worker starts after it


class HarnessStopped(RuntimeError):
    """The harness was stopped (a signal, or the process exiting): this evaluation has no verdict."""


def stopping() -> bool:
    return _STOPPING.is_set()


def fork_server(device: str) -> ForkServer:
    with _SERVERS_LOCK:
        server = _SERVERS.get(device)
        if server is None or not server.alive:
            server = _SERVERS[device] = ForkServer(device)
        return server


def kill_all() -> int:
    """Kill every worker this process started (each with its process group) and the fork servers; the
    number of workers killed. Run at exit, and by a stop signal (harness/stopping.py); no worker starts
    after it."""
    _STOPPING.set()
    with _LIVE_LOCK:
        workers = list(_LIVE)
    for worker in workers:
        worker.kill()
    with _SERVERS_LOCK:
        servers = list(_SERVERS.values())
        _SERVERS.clear()
    for server in servers:
        server.close()
    return len(workers)


def live_worker_pids() -> list[int]:
    """Process ids of the workers this process started and has not closed (for tests and reports)."""
    with _LIVE_LOCK:
        return [w.pid for w in _LIVE if w.pid is not None]


atexit.register(kill_all)


class WorkerProcess:
    def __init__(self, device: str, config: EvalConfig | None = None, stop: threading.Event | None = None) -> None:
        self.device = device
        self.config = config or EvalConfig()
        self.stop = stop  # its owner's stop flag (DeviceRunner.stop): set, no process starts
        self.pid: int | None = None
        self.proc: subprocess.Popen | None = None  # only without the fork server
        self.server: ForkServer | None = None
        self.returncode: int | None = None
        self.conn: Connection | None = None
        self.log_path: Path | None = None
        self.jobs_done = 0
        self.info: dict = {}  # the ready message: device name, memory, versions (harness/worker.py)

    # ---- process state -------------------------------------------------------------------------------
    def _wait(self, timeout_s: float) -> int | None:
        if self.pid is None:
            return self.returncode
        if self.returncode is None:
            if self.proc is not None:
                try:
                    self.returncode = self.proc.wait(timeout=timeout_s) if timeout_s else self.proc.poll()
                except subprocess.TimeoutExpired:
                    return None
            elif self.server is not None:
                try:
                    self.returncode = self.server.wait(self.pid, timeout_s)
                except (OSError, RuntimeError, ValueError):
                    self.returncode = -signal.SIGKILL  # the fork server is gone, and its children with it
        return self.returncode

    @property
    def alive(self) -> bool:
        return self.pid is not None and self._wait(0) is None

    def start(self) -> None:
        if _STOPPING.is_set() or (self.stop is not None and self.stop.is_set()):
            raise HarnessStopped(f"the harness is stopping: no new worker on {self.device}")
        parent_sock, child_sock = socket.socketpair()
        fd = child_sock.fileno()
        handle, log_name = tempfile.mkstemp(prefix="kkb_worker_", suffix=".log")
        os.close(handle)
        self.log_path = Path(log_name)
        self.returncode = None
        self.server, self.proc = None, None
        if self.config.fork_server and self.device not in FORK_BROKEN:
            try:
                self.server = fork_server(self.device)
                self.pid = self.server.fork(fd, self.log_path, self.config)
            except (OSError, RuntimeError, ValueError) as exc:
                FORK_BROKEN[self.device] = f"fork server: {exc}"
                self.server = None
        if self.server is None:
            cmd = [sys.executable, "-m", "harness.worker", "--fd", str(fd), "--device", self.device,
                   "--cpu-memory-bytes", str(self.config.cpu_memory_limit_bytes),
                   "--gpu-memory-fraction", str(self.config.gpu_memory_fraction)]
            with open(self.log_path, "ab") as log:
                self.proc = subprocess.Popen(cmd, pass_fds=(fd,), env=_env(self.device), cwd=tempfile.gettempdir(),
                                             stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                             start_new_session=True)
            self.pid = self.proc.pid
        child_sock.close()
        with _LIVE_LOCK:
            _LIVE.add(self)
        self.conn = Connection(parent_sock.detach())
        self.jobs_done = 0
        ready = self._receive(STARTUP_TIMEOUT_S)
        self.info = {k: v for k, v in ready.items() if k not in ("ready", "pid")} if ready.get("ready") else {}
        if ready.get("status"):
            if self.server is not None and self.device not in FORK_BROKEN:
                # e.g. CUDA refusing to start in a forked process: spawn workers directly from now on
                FORK_BROKEN[self.device] = f"{ready['reasons']} {self.log_tail(500)}"
                self.close()
                self.server = None
                return self.start()
            raise RuntimeError(f"harness worker on {self.device} failed to start: {ready['reasons']}\n"
                               f"{self.log_tail()}")

    def log_tail(self, n_chars: int = 3000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-n_chars:] if self.log_path else ""
        except OSError:
            return ""

    # ---- jobs ----------------------------------------------------------------------------------------
    def _receive(self, timeout_s: float) -> dict:
        """The next message, or a result describing why none came (timeout, crash)."""
        assert self.conn is not None
        deadline = time.monotonic() + timeout_s
        while True:
            remaining = deadline - time.monotonic()
            try:
                if self.conn.poll(max(0.0, min(remaining, 0.5))):
                    data = self.conn.recv_bytes()
                    try:
                        return json.loads(data)
                    except ValueError:
                        self.kill()
                        return {"status": "crashed", "reasons": ["the worker sent an unreadable result"]}
            except (EOFError, OSError):
                return self._death()
            if not self.alive and not self.conn.poll(0):
                return self._death()
            if remaining <= 0:
                self.kill()
                return {"status": "timeout", "reasons": [
                    f"no result within {timeout_s:.0f} s (hang, deadlock or far too slow); the worker was killed"]}

    def _death(self) -> dict:
        code = self._wait(10)
        self.kill()  # also any children left in its session
        code = self.returncode if code is None else code
        tail = self.log_tail(1500)
        if code is not None and code < 0:
            what = _signal_name(code)
            hint = " (killed: out of memory?)" if what == "SIGKILL" else ""
            reason = f"the worker died from {what}{hint} without a result"
        else:
            reason = f"the worker exited with code {code} without a result (sys.exit / os._exit in the candidate?)"
        return {"status": "crashed", "reasons": [reason], "diagnostics": {"worker_log_tail": tail}}

    def run(self, job: dict, timeout_s: float) -> dict:
        if not self.alive:
            self.start()
        assert self.conn is not None
        try:
            self.conn.send_bytes(json.dumps(job).encode())
        except OSError:
            return self._death()
        result = self._receive(timeout_s)
        self.jobs_done += 1
        if result.get("status") in ("timeout", "crashed"):
            result.setdefault("diagnostics", {})["worker_log_tail"] = self.log_tail(1500)
        return result

    def kill(self) -> None:
        if self.pid is None:
            return
        try:
            os.killpg(self.pid, signal.SIGKILL)  # the worker leads its own session: children go too
        except (ProcessLookupError, PermissionError):
            pass
        self._wait(10)

    def close(self) -> None:
        if self.conn is not None:
            try:
                self.conn.close()
            except OSError:
                pass
        self.kill()
        with _LIVE_LOCK:
            _LIVE.discard(self)
        self.conn = None
        self.pid = None
        if self.log_path is not None:
            try:
                self.log_path.unlink()
            except OSError:
                pass
