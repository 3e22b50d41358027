"""kill -9 in the middle of a session, then `kkb tune --resume ID`: no evaluated candidate is lost or re-run."""

from __future__ import annotations

import io
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter

from rich.console import Console

from agent_client.runner import resume_session
from tests.agent_client.agent_helpers import FAST_EVAL, REPO, SPEC, client_settings
from tests.agent_client.candidate_sources import compile_error, wrong
from tests.agent_client.fake_anthropic import FakeModelServer, text_with_code


def evaluations(db) -> int:
    try:
        with sqlite3.connect(db) as conn:
            return conn.execute("SELECT COUNT(*) FROM evaluations").fetchone()[0]
    except sqlite3.OperationalError:  # not created yet
        return 0


def test_resume_after_kill_9(kb, tmp_path):
    server = FakeModelServer([text_with_code(wrong()), text_with_code(compile_error()),
                              text_with_code(wrong(64))]).start()
    home = tmp_path / "home"
    env = {**os.environ, "ANTHROPIC_BASE_URL": server.url, "ANTHROPIC_API_KEY": "test-key", "KKB_HOME": str(home),
           "TRITON_INTERPRET": "1", "HF_HUB_OFFLINE": "1"}
    cmd = [sys.executable, "-m", "kernelkb_cli", "tune", str(SPEC), "--device", "cpu", "--provider", "anthropic",
           "--budget", "2", "--drafts", "2", "--proposals", "1", "--session-id", "killed", "--no-live"]
    cmd += [f"--eval-option={k}={json.dumps(v)}" for k, v in FAST_EVAL.items()]
    db = home / "sessions" / "killed" / "session.sqlite"
    proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 240
        while evaluations(db) < 1:
            assert proc.poll() is None, proc.stdout.read().decode()[-3000:]
            assert time.monotonic() < deadline, "no evaluation was committed in time"
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)  # kill -9 right after the first committed evaluation
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
        os.killpg(proc.pid, signal.SIGKILL) if _group_alive(proc.pid) else None  # its harness workers
    with sqlite3.connect(db) as conn:
        conn.row_factory = sqlite3.Row
        before = {r["id"]: dict(r) for r in conn.execute("SELECT * FROM nodes")}
    done_before = {i: r for i, r in before.items() if r["status"] != "pending"}
    assert len(done_before) == 1  # killed mid-session

    settings = client_settings(home, server.url)
    try:
        result = resume_session("killed", settings, console=Console(file=io.StringIO()), live=False, kb=kb)
    finally:
        server.stop()
    assert result.stop_reason == "budget" and result.nodes == 2 and result.evaluated == 2
    with sqlite3.connect(db) as conn:
        conn.row_factory = sqlite3.Row
        after = {r["id"]: dict(r) for r in conn.execute("SELECT * FROM nodes")}
        runs = Counter(r[0] for r in conn.execute("SELECT node_id FROM evaluations"))
    for node_id, row in done_before.items():  # kept as they were, not evaluated again
        assert after[node_id] == row
    assert all(count == 1 for count in runs.values()) and set(runs) == set(after)
    assert [after[i]["status"] for i in sorted(after)] == ["evaluated"] * 2
    # the stored config was enough: the resumed run used the same spec, budget and harness settings
    assert json.loads(after["n0000"]["verdict"])["status"] == "wrong"


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False
