"""`kkb sessions` on real session stores under a temporary KKB_HOME: list, show, delete, as typed."""

from __future__ import annotations

import json
import shutil

import pytest
from typer.testing import CliRunner

from agent_client.session.records import SessionConfig
from agent_client.session.store import SessionStore
from kernelkb_cli import app


@pytest.fixture
def home(tuned_session, tmp_path):
    """Two finished sessions (copies of one real session) and one that is running right now."""
    home = tmp_path / "home"
    for name in ("relu-one", "relu-two"):
        shutil.copytree(tuned_session["folder"], home / "sessions" / name)
    running = SessionStore.create(home / "sessions" / "live-one", SessionConfig(
        session_id="live-one", spec_path=str(tuned_session["config"].spec_path), budget=4))
    running.close()
    return home


def kkb(home, *args, input=None):
    result = CliRunner().invoke(app, ["sessions", *args, "--home", str(home)], input=input)
    assert "Traceback" not in result.output
    return result


def test_list_names_each_session_and_why_it_stopped(home):
    listed = kkb(home)
    assert listed.exit_code == 0, listed.output
    assert "3 sessions under" in listed.output
    for name in ("relu-one", "relu-two", "live-one"):
        assert name in listed.output
    assert "stopped because the candidate budget (--budget) was spent" in listed.output
    assert "not finished: it is running, or its process was killed" in listed.output
    assert "budget" in listed.output and "stop: budget" not in listed.output  # words, not the code


def test_list_as_json_parses(home, tuned_session):
    listed = kkb(home, "--json")
    sessions = {s["session_id"]: s for s in json.loads(listed.stdout)["sessions"]}
    assert set(sessions) == {"relu-one", "relu-two", "live-one"}
    one = sessions["relu-one"]
    result = tuned_session["result"]
    assert one["candidates"] == result.candidates and one["stop_reason"] == "budget"
    assert one["best_node_id"] == result.best_node_id and one["device"] == "cpu"
    assert sessions["live-one"]["status"] == "running" and sessions["live-one"]["stop_reason"] is None


def test_an_empty_home_says_there_are_none(tmp_path):
    listed = kkb(tmp_path)
    assert listed.exit_code == 0 and "no sessions under" in listed.output


def test_an_id_alone_shows_that_session(home):
    shown = kkb(home, "relu-one")
    assert shown.exit_code == 0 and "session relu-one" in shown.output


def test_show_by_a_unique_prefix(home, tuned_session):
    shown = kkb(home, "show", "relu-t")
    assert shown.exit_code == 0, shown.output
    assert "session relu-two" in shown.output and "stopped because the candidate budget" in shown.output
    assert "Triton interpreter's" in shown.output  # a CPU session's times
    as_json = json.loads(kkb(home, "show", "relu-two", "--json").stdout)
    assert [n["id"] for n in as_json["nodes"]] == [f"n{i:04d}" for i in range(tuned_session["result"].nodes)]
    assert {n["outcome"] for n in as_json["nodes"]} >= {"passed", "malformed"}


@pytest.mark.parametrize("args, named", [
    (["show", "relu"], "2 sessions start with it"),  # ambiguous
    (["show", "ghost"], "no session 'ghost'"),
    (["show"], "needs a session id"),
    (["delete", "ghost", "--yes"], "no session 'ghost'"),
    (["frob"], "'frob' is not one of list, show, delete"),
    (["list", "relu-one"], "kkb sessions show relu-one"),
])
def test_mistyped_arguments_are_named(home, args, named):
    result = kkb(home, *args)
    assert result.exit_code == 2 and named in result.output


def test_delete_asks_first_then_removes_the_folder(home):
    kept = kkb(home, "delete", "relu-two", input="n\n")
    assert kept.exit_code != 0 and (home / "sessions" / "relu-two").is_dir()
    deleted = kkb(home, "delete", "relu-two", "--yes", "--json")
    assert deleted.exit_code == 0 and json.loads(deleted.stdout)["deleted"] == "relu-two"
    assert not (home / "sessions" / "relu-two").exists() and (home / "sessions" / "relu-one").is_dir()


def test_delete_refuses_a_running_session_without_force(home):
    refused = kkb(home, "delete", "live-one", "--yes")
    assert refused.exit_code == 2 and "is running" in refused.output and "--force" in refused.output
    assert (home / "sessions" / "live-one").is_dir()
    assert kkb(home, "delete", "live-one", "--yes", "--force").exit_code == 0
    assert not (home / "sessions" / "live-one").exists()
