"""SIGTERM (as `timeout` sends it) or Ctrl-C of `kkb tune`: every harness worker it started ends with it, and
the candidate in flight stays pending for `kkb tune --resume`."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time

import pytest

from tests.agent_client.agent_helpers import FAST_EVAL, REPO, SPEC
from tests.agent_client.candidate_sources import hangs
from tests.agent_client.fake_anthropic import FakeModelServer, text_with_code
from tests.harness.harness_helpers import descendants, wait_gone


@pytest.mark.parametrize("sig", [signal.SIGTERM], ids=["term"])  # Ctrl-C: the same path (tests/harness/test_stopping.py)
def test_stop_signal_ends_every_worker(tmp_path, sig):
    server = FakeModelServer([text_with_code(hangs())]).start()
    home, pidfile = tmp_path / "home", tmp_path / "hanging.pid"
    env = {**os.environ, "ANTHROPIC_BASE_URL": server.url, "ANTHROPIC_API_KEY": "test-key", "KKB_HOME": str(home),
           "TRITON_INTERPRET": "1", "HF_HUB_OFFLINE": "1", "KKB_TEST_PIDFILE": str(pidfile),
           "KKB_HARNESS_CACHE": str(tmp_path / "cache")}
    cmd = [sys.executable, "-m", "kernelkb_cli", "tune", str(SPEC), "--device", "cpu", "--provider", "anthropic",
           "--budget", "1", "--drafts", "1", "--proposals", "1", "--session-id", "stopped", "--no-live",
           "--eval-option=timeout_s=600"]
    cmd += [f"--eval-option={k}={json.dumps(v)}" for k, v in FAST_EVAL.items()]
    proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 300
        while not pidfile.exists():
            assert proc.poll() is None, proc.stdout.read().decode()[-3000:]
            assert time.monotonic() < deadline, "the hanging candidate never started"
            time.sleep(0.1)
        tree = descendants(proc.pid)  # the fork server and the workers below it
        assert int(pidfile.read_text()) in tree
        proc.send_signal(sig)
        code = proc.wait(60)
    finally:
        if proc.poll() is None:
            proc.kill()
        server.stop()
    output = proc.stdout.read().decode()
    assert code == 130 and "every harness worker was stopped" in output, output[-3000:]
    assert wait_gone(tree, 20) == set(), f"left running: {tree}"
    with sqlite3.connect(home / "sessions" / "stopped" / "session.sqlite") as conn:
        statuses = [r[0] for r in conn.execute("SELECT status FROM nodes")]
    assert statuses == ["pending"]  # no verdict was made up for the stopped candidate
