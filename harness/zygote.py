"""The fork server: a process with torch and triton already imported (CUDA not initialised) that forks a
fresh worker per request, so replacing a worker after a failure costs milliseconds, not an import of torch.

Usage (started by harness/process.py): python -m harness.zygote --ctl-fd FD --device cuda:0

Control protocol on a SOCK_SEQPACKET socket, one JSON message per packet:
  {"op": "fork", "log": PATH, "cpu_memory_bytes": N, "gpu_memory_fraction": F} + 1 passed fd -> {"pid": P}
  {"op": "wait", "pid": P, "timeout_s": T} -> {"returncode": C}  (None while it runs; -N = signal N)
The forked worker starts its own session (os.setsid), so the parent kills it and its children as a group.
When the parent goes away (its end of the control socket closes), the fork server kills every worker it
forked, with their process groups, and exits; a worker also dies with the fork server (PR_SET_PDEATHSIG).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import sys
import time


def _preload() -> None:
    """Import once here what every worker needs; forked workers inherit it (CUDA stays uninitialised)."""
    import importlib

    import torch

    for name in ("triton", "triton.language", "torch._dynamo", "harness.checking", "harness.worker"):
        try:  # torch._dynamo: the first TorchDispatchMode use imports it (~10 s on a busy CPU)
            importlib.import_module(name)
        except ImportError:
            pass
    from harness.guard import OpRecorder

    with OpRecorder():  # warm the dispatch-mode path once (a CPU op: no CUDA context is created here)
        torch.empty(1)


def _die_with(parent_pid: int) -> None:
    """SIGKILL this process when its parent (the fork server, single-threaded) dies (Linux)."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() != parent_pid:  # the parent died before the request took effect
        os._exit(1)


def _kill_children(children: set[int]) -> None:
    for pid in children:
        try:
            os.killpg(pid, signal.SIGKILL)  # each worker leads its own session: its children go too
        except (ProcessLookupError, PermissionError):
            pass
    for pid in children:
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:
            pass


def _child(worker_fd: int, ctl: socket.socket, request: dict, device: str, parent_pid: int) -> None:
    try:
        ctl.close()
        os.setsid()
        _die_with(parent_pid)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        log_fd = os.open(request["log"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        os.dup2(log_fd, 1)
        os.dup2(log_fd, 2)
        os.close(log_fd)
        from harness.worker import serve

        serve(worker_fd, device, int(request.get("cpu_memory_bytes") or 0),
              float(request.get("gpu_memory_fraction") or 0.0))
    finally:
        os._exit(0)


def _wait(pid: int, timeout_s: float) -> int | None:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            done, status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return -signal.SIGKILL  # already reaped: report it as killed
        if done:
            return os.waitstatus_to_exitcode(status)
        if time.monotonic() >= deadline:
            return None
        time.sleep(0.01)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ctl-fd", type=int, required=True)
    parser.add_argument("--device", required=True)
    args = parser.parse_args()
    ctl = socket.socket(fileno=args.ctl_fd)
    _preload()
    ctl.send(json.dumps({"ready": True, "pid": os.getpid()}).encode())
    children: set[int] = set()
    me = os.getpid()
    try:
        while True:
            data, fds, _flags, _addr = socket.recv_fds(ctl, 65536, 1)
            if not data:
                break  # the parent went away
            request = json.loads(data)
            if request["op"] == "fork":
                pid = os.fork()
                if pid == 0:
                    _child(fds[0], ctl, request, args.device, me)
                children.add(pid)
                for fd in fds:
                    os.close(fd)
                ctl.send(json.dumps({"pid": pid}).encode())
            elif request["op"] == "wait":
                code = _wait(int(request["pid"]), float(request["timeout_s"]))
                if code is not None:
                    children.discard(int(request["pid"]))
                ctl.send(json.dumps({"returncode": code}).encode())
    except OSError:
        pass  # the control socket broke: the parent is gone
    finally:
        _kill_children(children)
    sys.exit(0)


if __name__ == "__main__":
    main()
