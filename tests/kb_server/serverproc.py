"""Test helper (not a test module): run `kkb serve` as a real uvicorn process on a loopback port the OS
picks, and find which port a child process listens on.

Usage: server = start_server(home, corpus_dir); ...; server.stop()
       with refused_port() as port: ...   (a port that refuses connections while the block runs)

No port is ever looked up, freed and reused later: another test worker could take it in between.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[2]
FIXTURE_CORPUS = Path(__file__).resolve().parent / "fixtures"  # holds accelerators/{h100,mi300x}.yaml


@contextlib.contextmanager
def refused_port() -> Iterator[int]:
    """A loopback port held bound but not listening: connections to it are refused until the block ends."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        yield s.getsockname()[1]


def listening_ports(pid: int) -> set[int]:
    """The TCP ports process `pid` listens on (Linux: its socket inodes in /proc/PID/fd and /proc/PID/net)."""
    inodes = set()
    with contextlib.suppress(OSError):
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            with contextlib.suppress(OSError):
                target = os.readlink(fd)
                if target.startswith("socket:["):
                    inodes.add(target[len("socket:["):-1])
    ports = set()
    for table in ("tcp", "tcp6"):
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]:
                fields = line.split()
                if fields[3] == "0A" and fields[9] in inodes:  # 0A: LISTEN
                    ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


def wait_for_port(proc: subprocess.Popen, timeout_s: float, what: str) -> int:
    """The port a just-started server bound (port 0: the OS picked it), once it listens."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode} before listening")
        ports = listening_ports(proc.pid)
        if ports:
            return min(ports)
        time.sleep(0.05)
    raise RuntimeError(f"{what} did not listen within {timeout_s} s")


@dataclass
class ServerProcess:
    proc: subprocess.Popen
    base_url: str
    log_path: Path
    home: Path
    env: dict

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


def start_server(home: Path, corpus_dir: Path = FIXTURE_CORPUS, env: dict | None = None,
                 timeout_s: float = 300.0) -> ServerProcess:
    full_env = {**os.environ, "KKB_HOME": str(home), "KKB_CORPUS_DIR": str(corpus_dir), "HF_HUB_OFFLINE": "1",
                "TRANSFORMERS_OFFLINE": "1", **(env or {})}
    if "KKB_API_KEY" not in (env or {}):
        full_env.pop("KKB_API_KEY", None)
    log_path = home.parent / f"server-{time.time_ns()}.log"
    log = log_path.open("wb")
    proc = subprocess.Popen([sys.executable, "-m", "kernelkb_cli", "serve", "--host", "127.0.0.1",
                             "--port", "0", "--log-level", "warning"],
                            cwd=REPO, env=full_env, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + timeout_s
    try:
        port = wait_for_port(proc, timeout_s, "kkb serve")
    except RuntimeError as exc:
        proc.kill()
        raise RuntimeError(f"{exc}:\n{log_path.read_text(errors='replace')}") from exc
    server = ServerProcess(proc, f"http://127.0.0.1:{port}", log_path, home, dict(env or {}))
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}:\n{server.log()}")
        try:
            if httpx.get(f"{server.base_url}/health", timeout=1.0).status_code == 200:
                return server
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    server.stop()
    raise RuntimeError(f"server did not answer /health within {timeout_s} s:\n{server.log()}")


@contextlib.contextmanager
def seeded_app_in_thread(home: Path, api_key: str) -> Iterator[str]:
    """The app over a store seeded with the fixture corpus, served by uvicorn in this process on a port the OS
    picks; yields its base URL (writes need api_key)."""
    import threading

    import uvicorn

    from ingest.upload import PipelineIngestor
    from kb_server.api.settings import ServerSettings
    from kb_server.main import create_app
    from kb_server.store import Store
    from tests.kb_server import kbdata

    settings = ServerSettings(home=home, corpus_dir=FIXTURE_CORPUS, api_key=api_key)
    with kbdata.one_torch_thread():
        store = Store(settings)
        kbdata.seed(store)
        app = create_app(settings, store=store, bound_host="127.0.0.1", ingestor=PipelineIngestor())
        server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning"))
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        deadline = time.monotonic() + 60
        while not server.started and time.monotonic() < deadline:
            time.sleep(0.05)
        assert server.started, "uvicorn did not start"
        try:
            yield f"http://127.0.0.1:{server.servers[0].sockets[0].getsockname()[1]}"
        finally:
            server.should_exit = True
            thread.join(10)
