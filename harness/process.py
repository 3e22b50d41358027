"""One worker process seen from the parent: start, send a job, wait with a timeout, classify its death.

Usage: w = WorkerProcess("cpu", config); result = w.run(job, timeout_s=60); w.close()

The worker is `python -m harness.worker` in its own session (so a hang or a forked child is killed as a
group), with its stdout/stderr in a log file (never parsed: results come on the socket), the harness's
parent folder on PYTHONPATH, and each backend's environment (e.g. TRITON_INTERPRET=1 on CPU).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from multiprocessing.connection import Connection
from pathlib import Path

from harness.backends import worker_env
from harness.config import EvalConfig

HARNESS_ROOT = Path(__file__).resolve().parent.parent
STARTUP_TIMEOUT_S = 180.0  # importing torch on a loaded 2-core machine can take a while


def _signal_name(code: int) -> str:
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


class WorkerProcess:
    def __init__(self, device: str, config: EvalConfig | None = None) -> None:
        self.device = device
        self.config = config or EvalConfig()
        self.proc: subprocess.Popen | None = None
        self.conn: Connection | None = None
        self.log_path: Path | None = None
        self.jobs_done = 0

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def start(self) -> None:
        parent_sock, child_sock = socket.socketpair()
        fd = child_sock.fileno()
        env = dict(os.environ)
        env.update(worker_env(self.device))
        env["PYTHONPATH"] = os.pathsep.join([str(HARNESS_ROOT)] + [p for p in [env.get("PYTHONPATH")] if p])
        env["PYTHONUNBUFFERED"] = "1"
        log = tempfile.NamedTemporaryFile(prefix="kkb_worker_", suffix=".log", delete=False)  # noqa: SIM115
        self.log_path = Path(log.name)
        cmd = [sys.executable, "-m", "harness.worker", "--fd", str(fd), "--device", self.device]
        if self.device.startswith("cpu"):
            cmd += ["--cpu-memory-bytes", str(self.config.cpu_memory_limit_bytes)]
        else:
            cmd += ["--gpu-memory-fraction", str(self.config.gpu_memory_fraction)]
        self.proc = subprocess.Popen(cmd, pass_fds=(fd,), env=env, cwd=tempfile.gettempdir(), stdout=log,
                                     stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        log.close()
        child_sock.close()
        self.conn = Connection(parent_sock.detach())
        self.jobs_done = 0
        ready = self._receive(STARTUP_TIMEOUT_S)
        if ready.get("status"):
            raise RuntimeError(f"harness worker on {self.device} failed to start: {ready['reasons']}\n"
                               f"{self.log_tail()}")

    def log_tail(self, n_chars: int = 3000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-n_chars:] if self.log_path else ""
        except OSError:
            return ""

    def _receive(self, timeout_s: float) -> dict:
        """The next message, or a result describing why none came (timeout, crash)."""
        assert self.conn is not None and self.proc is not None
        deadline = time.monotonic() + timeout_s
        while True:
            remaining = deadline - time.monotonic()
            try:
                if self.conn.poll(max(0.0, min(remaining, 1.0))):
                    data = self.conn.recv_bytes()
                    try:
                        return json.loads(data)
                    except ValueError:
                        self.kill()
                        return {"status": "crashed", "reasons": ["the worker sent an unreadable result"]}
            except (EOFError, OSError):
                return self._death()
            if self.proc.poll() is not None and not self.conn.poll(0):
                return self._death()
            if remaining <= 0:
                self.kill()
                return {"status": "timeout", "reasons": [
                    f"no result within {timeout_s:.0f} s (hang, deadlock or far too slow); the worker was killed"]}

    def _death(self) -> dict:
        assert self.proc is not None
        try:
            code = self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.kill()
            code = self.proc.returncode
        self.kill()  # also any children left in its session
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
        if self.proc is None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass

    def close(self) -> None:
        if self.conn is not None:
            try:
                self.conn.close()
            except OSError:
                pass
        self.kill()
        self.conn = None
        if self.log_path is not None:
            try:
                self.log_path.unlink()
            except OSError:
                pass
