"""`kkb tune` as a newcomer gets it wrong: each mistake is one message naming the argument or setting, never
a traceback, and a non-zero exit that says which kind of failure it was (`kkb tune --help` lists them)."""

from __future__ import annotations

import json
import socket

import pytest
from typer.testing import CliRunner

from agent_client.cli import TuneExit
from kernelkb_cli import app
from tests.agent_client.agent_helpers import SPEC
from tests.agent_client.fake_anthropic import FakeModelServer, Reply

NO_KEYS = {"ANTHROPIC_API_KEY": None, "ANTHROPIC_BASE_URL": None, "KKB_ANTHROPIC_BASE_URL": None,
           "OPENAI_BASE_URL": None, "KKB_OPENAI_BASE_URL": None}


def tune(tmp_path, *args, env=None, live_default=False):
    flags = [] if live_default else ["--no-live"]
    result = CliRunner().invoke(app, ["tune", *args, "--home", str(tmp_path / "home"), *flags],
                                env={**NO_KEYS, **(env or {})})
    assert "Traceback" not in result.output, result.output
    return result


@pytest.mark.parametrize("args, named", [
    ([], "give a SPEC file"),
    (["nope.py"], "nope.py does not exist"),
    ([str(SPEC), "--provider", "antropic"], "'--provider': 'antropic' is not one of anthropic"),
    ([str(SPEC), "--policy", "best"], "'--policy': 'best' is not one of"),
    ([str(SPEC), "--backend", "cobol"], "--backend 'cobol': one of"),
    ([str(SPEC), "--backend", "cuda", "--device", "cpu"], "--backend cuda cannot run on cpu"),
    ([str(SPEC), "--device", "gpu"], "--device 'gpu': cpu, cuda or cuda:N"),
    ([str(SPEC), "--device", "cuda:99"], "--device cuda:99: this machine has"),  # a GPU it does not have
    ([str(SPEC.parent)], "is a folder"),
    ([str(SPEC), "--device", "cpu", "--session-id", "../elsewhere"], "--session-id '../elsewhere': letters"),
    ([str(SPEC), "--budget", "0"], "'--budget'"),
    ([str(SPEC), "--peaks", "guess"], "'--peaks': 'guess' is not one of facts, measured"),
    ([str(SPEC), "--eval-option", "trials"], "'trials': expected KEY=VALUE"),
    ([str(SPEC), "--eval-option", "trails=2"], "--eval-option trails: not a harness setting"),  # a typo
    ([str(SPEC), "--eval-option", "trials=many"], "--eval-option trials='many': expected an integer"),
    ([str(SPEC), "--provider", "replay", "--device", "cpu"], "--replay-from SESSION_ID"),
    (["--resume", "ghost"], "no session 'ghost' under"),
])
def test_a_bad_argument_is_named(tmp_path, args, named):
    result = tune(tmp_path, *args)
    assert result.exit_code == TuneExit.BAD_INPUT and named in result.output, result.output
    assert not (tmp_path / "home" / "sessions").exists()  # nothing was started


@pytest.mark.parametrize("provider, setting", [("anthropic", "ANTHROPIC_API_KEY"), ("openai", "OPENAI_BASE_URL")])
def test_a_provider_without_its_key_is_one_line(tmp_path, provider, setting):
    result = tune(tmp_path, str(SPEC), "--provider", provider, "--device", "cpu")
    assert result.exit_code == TuneExit.PROVIDER_FAILED, result.output
    [line] = result.output.splitlines()
    assert line.startswith(f"error: provider {provider} needs") and setting in line
    assert not (tmp_path / "home" / "sessions").exists()


@pytest.mark.parametrize("verb", [["tune", str(SPEC), "--device", "cpu"], ["sessions"]])
def test_a_bad_setting_names_its_variable(tmp_path, verb):
    result = CliRunner().invoke(app, [*verb, "--home", str(tmp_path)], env={"KKB_PROVIDER_RETRY_S": "a minute"})
    assert result.exit_code == TuneExit.BAD_INPUT and "Traceback" not in result.output
    [line] = result.output.splitlines()
    assert line.startswith("error: setting KKB_PROVIDER_RETRY_S='a minute': ")


def test_resume_says_which_flags_it_ignores(tmp_path):
    result = tune(tmp_path, "--resume", "ghost", "--target", "h100", "--budget", "50", "--base-url", "http://x")
    [warning] = [line for line in result.output.splitlines() if line.startswith("warning:")]
    assert warning.startswith("warning: --target ignored: a resumed session keeps the search it was started with")
    assert "--budget ignored" not in warning and "--base-url ignored" not in warning  # these a resume takes


def closed_port_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


FAST = ["--device", "cpu", "--eval-option", "trials=1", "--eval-option", "max_reps=2",
        "--eval-option", "max_timing_s=0.5", "--no-write-back"]


@pytest.mark.slow
def test_no_network_is_a_bounded_wait_then_one_error_and_exit_3(tmp_path):
    url = closed_port_url()
    result = tune(tmp_path, str(SPEC), "--provider", "anthropic", "--session-id", "offline-net", "--json", *FAST,
                  env={"ANTHROPIC_API_KEY": "a-key", "ANTHROPIC_BASE_URL": url, "KKB_PROVIDER_RETRY_S": "0.5",
                       "KKB_RETRY_BASE_DELAY_S": "0.1", "FORCE_COLOR": "1"},  # as on a terminal
                  live_default=True)
    assert result.exit_code == TuneExit.PROVIDER_FAILED, result.output
    printed = json.loads(result.stdout)  # stdout stays the result, as JSON
    assert "best speedup" not in result.stderr  # --json: no live panel (its rows), even on a terminal
    assert printed["stop_reason"] == "provider_failed" and printed["candidates"] == 0
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and f"cannot reach {url}" in errors[0] and "KKB_PROVIDER_RETRY_S=0.5" in errors[0]
    assert "retrying for up to 0.5 s in all (KKB_PROVIDER_RETRY_S)" in result.stderr
    assert "kkb tune --resume offline-net" in errors[0]
    shown = json.loads(CliRunner().invoke(app, ["sessions", "show", "offline-net", "--home", str(tmp_path / "home"),
                                                "--json"]).stdout)
    assert shown["stop_text"].startswith("the provider failed: ") and f"cannot reach {url}" in shown["stop_text"]


@pytest.mark.slow
def test_replies_without_a_candidate_exit_4(tmp_path):
    server = FakeModelServer([Reply(text="A persistent kernel would do; I will write it next time.")]).start()
    try:
        result = tune(tmp_path, str(SPEC), "--provider", "anthropic", "--budget", "2", "--drafts", "2", *FAST,
                      "-o", str(tmp_path / "new" / "result.json"),  # a folder not made yet
                      env={"ANTHROPIC_API_KEY": "a-key", "ANTHROPIC_BASE_URL": server.url})
    finally:
        server.stop()
    assert result.exit_code == TuneExit.NO_CANDIDATES, result.output
    assert json.loads((tmp_path / "new" / "result.json").read_text())["candidates"] == 0
    assert "error: no candidates were produced (2 replies without one); the session stopped because the " \
           "candidate budget (--budget) was spent" in result.output


@pytest.mark.slow
def test_a_wrong_port_is_mended_by_resume_with_the_endpoint_and_budget_changed(tmp_path):
    """The error says `kkb tune --resume ID` continues it: with the URL set right (here in the environment)
    it does, `kkb sessions show` tells which URL each run used, and --budget gives the finished session more."""
    from tests.agent_client.candidate_sources import wrong
    from tests.agent_client.fake_anthropic import text_with_code

    typo = closed_port_url()
    key = {"ANTHROPIC_API_KEY": "a-key", "KKB_PROVIDER_RETRY_S": "0"}
    first = tune(tmp_path, str(SPEC), "--provider", "anthropic", "--base-url", typo, "--session-id", "t-typo",
                 "--budget", "1", "--drafts", "1", "--proposals", "1", *FAST, env=key)
    assert first.exit_code == TuneExit.PROVIDER_FAILED, first.output
    assert f"cannot reach {typo}" in first.output and "`kkb tune --resume t-typo` continues it (with --base-url" in first.output
    server = FakeModelServer([text_with_code(wrong()), text_with_code(wrong(64))]).start()
    try:
        again = tune(tmp_path, "--resume", "t-typo", env={**key, "ANTHROPIC_BASE_URL": server.url})
        assert again.exit_code == TuneExit.OK, again.output
        assert "warning:" not in again.output and len(server.requests) == 1
        assert f"note: resumed with the model claude-sonnet-5 at {server.url} (the last run used" in again.output
        more = tune(tmp_path, "--resume", "t-typo", "--base-url", server.url, "--budget", "2", env=key)
    finally:
        server.stop()
    assert more.exit_code == TuneExit.OK, more.output
    assert "note: --budget 2: the session's candidates in all (was 1; it has 1, so 1 more)" in more.output
    assert "warning:" not in more.output and len(server.requests) == 2
    home = ["--home", str(tmp_path / "home")]
    shown = CliRunner().invoke(app, ["sessions", "show", "t-typo", *home], env={"COLUMNS": "300"})
    assert (f"reached the model claude-sonnet-5 at {typo} (run 1); the model claude-sonnet-5 at {server.url} "
            "(runs 2-3)") in shown.output
    runs = json.loads(CliRunner().invoke(app, ["sessions", "show", "t-typo", "--json", *home]).stdout)["runs"]
    assert [r["endpoint"]["base_url"] for r in runs] == [typo, server.url, server.url]


@pytest.mark.slow
def test_a_spec_the_offline_mode_cannot_read_leaves_no_empty_session(tmp_path):
    """Nothing came of it: the reason with the spec's line, exit 4, and no session with no nodes to list."""
    spec = tmp_path / "typo.py"
    spec.write_text(SPEC.read_text().replace("return torch.relu(x)", "return undefined_name + torch.relu(x)"))
    result = tune(tmp_path, str(spec), "--provider", "offline", "--budget", "2", *FAST)
    assert result.exit_code == TuneExit.NO_CANDIDATES, result.output
    assert "NameError: name 'undefined_name' is not defined (nothing was kept)" in result.output, result.output
    assert "replies without one" not in result.output
    assert not (tmp_path / "home" / "sessions").exists() or not any((tmp_path / "home" / "sessions").iterdir())
