"""Clean stops: Ctrl-C, SIGTERM or SIGKILL of `kkb bench` ends every worker it started (harness/stopping.py,
the fork server's watch on its parent, the workers' parent-death signal)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import pytest

from tests.harness.harness_helpers import CANDIDATES, REPO, SPECS, descendants, harness_env, wait_gone


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGKILL], ids=["term", "int", "kill"])
def test_stop_signal_ends_every_worker(tmp_path, sig):
    cands = tmp_path / "cands"
    cands.mkdir()
    (cands / "tiny_softmax.py").write_text((CANDIDATES / "launch_then_hang.py").read_text())
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "tiny_softmax.py").write_text((SPECS / "tiny_softmax.py").read_text())
    pidfile = tmp_path / "hanging.pid"
    cmd = [sys.executable, "-m", "harness.cli", "--suite", str(suite), "--candidates", str(cands), "--device",
           "cpu", "--no-compile-baseline", "--timeout", "600", "-o", str(tmp_path / "out.json")]
    proc = subprocess.Popen(cmd, cwd=REPO, env=harness_env(tmp_path, KKB_TEST_PIDFILE=str(pidfile)),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 240
        while not pidfile.exists():
            assert proc.poll() is None, proc.stdout.read().decode()[-3000:]
            assert time.monotonic() < deadline, "the hanging candidate never started"
            time.sleep(0.1)
        tree = descendants(proc.pid)  # fork server, its spare and busy workers, the candidate's worker
        assert int(pidfile.read_text()) in tree and len(tree) >= 3
        proc.send_signal(sig)
        code = proc.wait(180)  # the event itself, with a deadline generous for a loaded machine
    finally:
        if proc.poll() is None:
            proc.kill()
    output = proc.stdout.read().decode()
    assert code == (-signal.SIGKILL if sig == signal.SIGKILL else 130), output[-3000:]
    if sig != signal.SIGKILL:
        assert "interrupted" in output
    assert wait_gone(tree, 20) == set(), f"left running after {sig.name}: {tree}"
