"""Test helper (not a test module): run `kkb serve` as a real uvicorn process on a free loopback port.

Usage: server = start_server(home, corpus_dir); ...; server.stop()
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[2]
FIXTURE_CORPUS = Path(__file__).resolve().parent / "fixtures"  # holds accelerators/{h100,mi300x}.yaml


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


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
    port = free_port()
    full_env = {**os.environ, "KKB_HOME": str(home), "KKB_CORPUS_DIR": str(corpus_dir), "HF_HUB_OFFLINE": "1",
                "TRANSFORMERS_OFFLINE": "1", **(env or {})}
    if "KKB_API_KEY" not in (env or {}):
        full_env.pop("KKB_API_KEY", None)
    log_path = home.parent / f"server-{port}.log"
    log = log_path.open("wb")
    proc = subprocess.Popen([sys.executable, "-m", "kernelkb_cli", "serve", "--host", "127.0.0.1",
                             "--port", str(port), "--log-level", "warning"],
                            cwd=REPO, env=full_env, stdout=log, stderr=subprocess.STDOUT)
    server = ServerProcess(proc, f"http://127.0.0.1:{port}", log_path, home, dict(env or {}))
    deadline = time.monotonic() + timeout_s
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
