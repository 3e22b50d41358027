"""The verbs as a person types them: help, bad input named, and the session store's config round trip."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from typer.testing import CliRunner

from agent_client.session.records import SessionConfig
from agent_client.session.store import SessionStore
from kernelkb_cli import app


def test_tune_help_lists_the_flags():
    result = CliRunner().invoke(app, ["tune", "--help"])
    assert result.exit_code == 0
    for flag in ("--budget", "--time-budget", "--device", "--resume", "--provider", "--policy", "--kb"):
        assert flag in result.output


def test_tune_names_a_missing_spec(tmp_path):
    result = CliRunner().invoke(app, ["tune", str(tmp_path / "nope.py"), "--home", str(tmp_path), "--device", "cpu"])
    assert result.exit_code == 2 and "nope.py does not exist" in result.output


def test_resume_names_an_unknown_session(tmp_path):
    result = CliRunner().invoke(app, ["tune", "--resume", "ghost", "--home", str(tmp_path)])
    assert result.exit_code == 2 and "no session 'ghost' under" in result.output


def test_session_config_round_trips_through_the_store(tmp_path):
    config = SessionConfig(session_id="s", spec_path="/x/spec.py", budget=7, eval_options={"trials": 1},
                           provider_options={"source": "old"}, time_budget_s=30.0)
    store = SessionStore.create(tmp_path / "s", config)
    store.close()
    reopened = SessionStore.open(tmp_path / "s")
    assert reopened.config() == config
    assert reopened._db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    reopened.close()


def test_a_finished_session_resumed_prints_its_result_as_json(tuned_session, tmp_path):
    # a copy of the session, resumed: its budget is spent, so it only says where it stands
    home = tmp_path / "home"
    shutil.copytree(tuned_session["folder"], home / "sessions" / "relu-one")
    out = tmp_path / "result.json"
    result = CliRunner().invoke(app, ["tune", "--resume", "relu-one", "--home", str(home), "-o", str(out),
                                      "--json", "--no-live"],
                                env={"ANTHROPIC_API_KEY": "unused: no request is made"})
    assert result.exit_code == 0, result.output
    printed = json.loads(result.stdout)
    assert printed == json.loads(out.read_text())
    assert printed["session_id"] == "relu-one" and printed["nodes"] == 5
    assert "session relu-one" in result.stderr  # the human summary, off stdout


def test_help_and_readme_name_the_model_its_settings_and_the_exit_status():
    from agent_client.config import ClientSettings

    model = ClientSettings.model_fields["anthropic_model"].default
    shown = " ".join(CliRunner().invoke(app, ["tune", "--help"], env={"COLUMNS": "200"}).output.split())
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    for text in (shown, readme):
        assert model in text and "KKB_ANTHROPIC_MODEL" in text and "ANTHROPIC_BASE_URL" in text
        assert "OPENAI_BASE_URL" in text and "KKB_PROVIDER_RETRY_S" in text
    assert "3 the provider failed" in shown and "4 no candidates were produced" in shown
    assert "3 when the provider failed" in readme and "4 when no candidate was produced" in readme
