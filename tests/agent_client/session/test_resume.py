"""kill -9 in the middle of a session, then `kkb tune --resume ID`: no evaluated candidate is lost or re-run;
and what a resume may change (the endpoint, the budgets) and what it keeps (the search)."""

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

import pytest
from rich.console import Console

from agent_client.runner import resume_session
from agent_client.session.resume import ResumeChanges, resumed_config, runs_text
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


# -- what a resume may change: the endpoint and the budgets, never the search (session/resume.py)

def stored_config(**fields):
    from agent_client.session.records import SessionConfig

    defaults = {"session_id": "s", "spec_path": str(SPEC), "provider": "anthropic", "budget": 16,
                "provider_options": {"base_url": "http://127.0.0.1:8999", "model": "claude-typo"}}
    return SessionConfig(**{**defaults, **fields})


@pytest.mark.parametrize("changes, environment, options", [
    # nothing said: the session reaches the model as it was started
    (ResumeChanges(), {}, {"base_url": "http://127.0.0.1:8999", "model": "claude-typo"}),
    # --base-url and --model replace the stored ones
    (ResumeChanges(base_url="http://127.0.0.1:8911", model="claude-good"), {},
     {"base_url": "http://127.0.0.1:8911", "model": "claude-good"}),
    # the environment set now wins over the flags the session was started with
    (ResumeChanges(), {"anthropic_base_url": "http://127.0.0.1:8911", "anthropic_model": "claude-good"}, {}),
    # and this command's flag over the environment
    (ResumeChanges(base_url="http://127.0.0.1:8922"), {"anthropic_base_url": "http://127.0.0.1:8911"},
     {"base_url": "http://127.0.0.1:8922", "model": "claude-typo"}),
])
def test_a_resume_takes_the_endpoint_it_is_given(tmp_path, changes, environment, options):
    settings = client_settings(tmp_path, **environment)  # given as the environment would give them
    config, notes = resumed_config(stored_config(), settings, changes, candidates=3, spent_s=10.0)
    assert config.provider_options == options and notes == []
    assert config.budget == 16 and config.spec_path == str(SPEC)  # the search stays


def test_a_resume_extends_the_budgets_in_one_line_each(tmp_path):
    config, notes = resumed_config(stored_config(time_budget_s=300.0), client_settings(tmp_path),
                                   ResumeChanges(budget=24, time_budget_s=600.0), candidates=16, spent_s=290.0)
    assert config.budget == 24 and config.time_budget_s == 600.0
    assert notes == ["--budget 24: the session's candidates in all (was 16; it has 16, so 8 more)",
                     "--time-budget 600: the session's seconds in all (was 300 s; 290 s spent, 310 s left)"]
    same, notes = resumed_config(stored_config(), client_settings(tmp_path), ResumeChanges(budget=16), 16, 0.0)
    assert same == stored_config() and notes == []  # the budget it has: nothing to say


def test_a_bad_endpoint_is_mended_on_resume_and_recorded(kb, tmp_path):
    """The session started at a closed port fails; resumed with --base-url it reaches the model; a finished
    session resumed with a larger --budget asks for more; each run's endpoint is on record."""
    from agent_client.runner import new_config, run_session
    from agent_client.session.store import SessionStore
    from tests.agent_client.providers.test_failures import closed_port_url

    typo = closed_port_url()
    settings = client_settings(tmp_path, None, anthropic_api_key="a-key", retry_attempts=0)
    config = new_config(SPEC, settings, session_id="t-typo", eval_overrides=FAST_EVAL, budget=2, drafts=2,
                        proposals_per_step=1, device="cpu", provider="anthropic", write_back=False,
                        provider_options={"base_url": typo})  # as `--base-url` gives it
    out = io.StringIO()
    first = run_session(config, settings, console=Console(file=out), live=False, kb=kb, report=False)
    assert first.stop_reason == "provider_failed" and f"cannot reach {typo}" in first.stop_text

    server = FakeModelServer([text_with_code(wrong()), text_with_code(wrong(64)), text_with_code(wrong(32))]).start()
    try:
        out = io.StringIO()
        again = resume_session("t-typo", settings, ResumeChanges(base_url=server.url),
                               console=Console(file=out, width=300), live=False, kb=kb, report=False)
        assert again.stop_reason == "budget" and again.nodes == 2 and len(server.requests) == 2
        assert (f"note: resumed with the model claude-sonnet-5 at {server.url} (the last run used the model "
                f"claude-sonnet-5 at {typo})") in out.getvalue()
        out = io.StringIO()
        more = resume_session("t-typo", settings, ResumeChanges(budget=3), console=Console(file=out, width=300),
                              live=False, kb=kb, report=False)  # the URL that worked is the session's now
    finally:
        server.stop()
    assert "note: --budget 3: the session's candidates in all (was 2; it has 2, so 1 more)" in out.getvalue()
    assert more.stop_reason == "budget" and more.nodes == 3 and len(server.requests) == 3
    store = SessionStore.open(tmp_path / "sessions" / "t-typo")
    try:
        stored, runs = store.config(), store.runs()
    finally:
        store.close()
    assert stored.provider_options == {"base_url": server.url} and stored.budget == 3
    assert [r["endpoint"]["base_url"] for r in runs] == [typo, server.url, server.url]
    assert runs_text(runs) == (f"the model claude-sonnet-5 at {typo} (run 1); the model claude-sonnet-5 at "
                               f"{server.url} (runs 2-3)")


def test_a_store_recorded_before_runs_noted_their_endpoint_opens(tmp_path):
    from agent_client.session.store import SessionStore

    store = SessionStore.create(tmp_path / "s", stored_config())
    store.begin_run()
    store._db.execute("ALTER TABLE runs DROP COLUMN endpoint")  # as an older kkb wrote it
    store.close()
    store = SessionStore.open(tmp_path / "s")
    try:
        assert [r["endpoint"] for r in store.runs()] == [None] and runs_text(store.runs()) == ""
        store.begin_run({"model": "m", "base_url": "http://h"})
        assert store.runs()[-1]["endpoint"] == {"model": "m", "base_url": "http://h"}
    finally:
        store.close()
