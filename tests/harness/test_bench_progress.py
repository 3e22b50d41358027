"""`kkb bench --suite` shows its progress: a rich bar on a terminal, a line per row in a log, nothing under
--json (stdout is the results file, pure JSON)."""

from __future__ import annotations

import json

import typer
from typer.testing import CliRunner

from harness.cli import bench
from tests.harness.harness_helpers import SPECS

app = typer.Typer()
app.command()(bench)
SUITE = SPECS / "suite"
ARGS = ["--suite", str(SUITE), "--device", "cpu", "--no-compile-baseline"]


def test_a_log_gets_one_line_per_row(tmp_path):
    result = CliRunner().invoke(app, [*ARGS, "-o", str(tmp_path / "r.json")])
    assert result.exit_code == 0, result.output
    assert "1_TinyRelu : baseline" in result.stderr and "2_TinySum : baseline" in result.stderr


def test_a_terminal_gets_a_progress_bar(tmp_path):
    result = CliRunner().invoke(app, [*ARGS, "-o", str(tmp_path / "r.json")], env={"FORCE_COLOR": "1"})
    assert result.exit_code == 0, result.output
    assert "problems" in result.stderr and "2/2" in result.stderr  # the bar, with its count
    assert "1_TinyRelu : baseline" not in result.stderr  # instead of the lines


def test_json_shows_no_progress_and_stdout_parses(tmp_path):
    result = CliRunner().invoke(app, [*ARGS, "--json", "-o", str(tmp_path / "r.json")], env={"FORCE_COLOR": "1"})
    assert result.exit_code == 0, result.output
    assert [r["spec"] for r in json.loads(result.stdout)["rows"]] == ["1_TinyRelu", "2_TinySum"]
    assert "2/2" not in result.stderr and ": baseline" not in result.stderr  # neither bar nor lines
