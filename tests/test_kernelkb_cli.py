"""The `kkb` layer itself (kernelkb_cli.py): every verb that writes a file checks its -o/--output path before
any work, so a session or a suite never ends on a path it cannot write.

Usage: .venv/bin/python -m pytest -q tests/test_kernelkb_cli.py
"""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from kernelkb_cli import app, output_problem
from tests.agent_client.agent_helpers import SPEC
from tests.harness.harness_helpers import CANDIDATES, SPECS

RELU_SPEC, RELU_CANDIDATE = SPECS / "suite" / "1_TinyRelu.py", CANDIDATES / "suite" / "1_TinyRelu.py"

# each verb that writes a file, with the arguments that would otherwise start its work
VERBS = {
    "tune": ["tune", str(SPEC), "--device", "cpu", "--budget", "1", "--provider", "offline", "--no-live"],
    "bench": ["bench", str(RELU_SPEC), str(RELU_CANDIDATE), "--device", "cpu"],
    "bench --suite": ["bench", "--suite", str(SPECS / "suite"), "--device", "cpu"],
    "prompt": ["prompt", str(SPEC), "--target", "h100"],
    "report": ["report", "some-session"],
    "export": ["export", "some-session"],
    "export-kernel": ["export-kernel", "some-session"],
    "facts": ["facts", "--template", "nova-x1"],
}


def _bad_outputs(tmp_path: Path) -> dict[str, Path]:
    (tmp_path / "a_file.txt").write_text("kept\n")
    (tmp_path / "a_folder").mkdir()
    bad = {"a file as its folder": tmp_path / "a_file.txt" / "out.json", "a folder": tmp_path / "a_folder"}
    if Path("/proc/self").is_dir():  # a folder nothing can be made in, even by root
        bad["under /proc"] = Path("/proc/nope/out.json")
    return bad


@pytest.mark.parametrize("verb", sorted(VERBS))
def test_an_unwritable_output_is_refused_before_any_work(tmp_path, monkeypatch, verb):
    monkeypatch.setenv("KKB_HOME", str(tmp_path / "home"))
    for why, path in _bad_outputs(tmp_path).items():
        result = CliRunner().invoke(app, [*VERBS[verb], "-o", str(path)])
        assert result.exit_code == 2, (why, result.output)
        [line] = result.output.splitlines()  # one line, no traceback
        assert line.startswith(f"error: -o {path}: "), (why, line)
        assert not (tmp_path / "home").exists()  # nothing was started: no store, no session
    assert (tmp_path / "a_file.txt").read_text() == "kept\n"


def test_the_reasons_name_what_is_wrong(tmp_path):
    bad = _bad_outputs(tmp_path)
    assert output_problem(bad["a folder"]).endswith("is a folder; name the file to write in it")
    assert output_problem(bad["a file as its folder"]).endswith(f"{tmp_path / 'a_file.txt'} is a file, not a folder")


def test_a_writable_output_passes_and_the_check_leaves_nothing(tmp_path):
    assert output_problem(tmp_path / "new" / "deeper" / "r.json") is None
    assert output_problem(tmp_path / "r.json") is None
    existing = tmp_path / "old.json"
    existing.write_text("{}")
    assert output_problem(existing) is None and existing.read_text() == "{}"  # not truncated
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.json"]  # no folder made, no probe left
