"""One convention for every `kkb` verb, read from `kkb VERB --help` and the options behind it:
`--json` is a flag that prints JSON on stdout; a verb that writes a file names it with `-o/--output PATH`;
a verb that can use a remote knowledge base names it with `--kb URL` (or the setting KKB_KB_URL).

Usage: .venv/bin/python -m pytest -q tests/test_cli_convention.py
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import pytest
import typer
from typer.testing import CliRunner

from kernelkb_cli import app

COMMANDS = typer.main.get_command(app)
VERBS = sorted(COMMANDS.commands)

WRITES_A_FILE = {"bench", "tune", "report", "export", "export-kernel", "facts", "prompt"}
REMOTE_KB = {"ingest", "search", "kernels", "documents", "facts", "prompt", "tune", "export-kernel"}
NO_JSON = {"mcp": "its stdout is the Model Context Protocol stream"}
# Spellings that once meant the output file or the server, or that could be taken for them
OTHER_NAMES = {"--out", "--url", "--kb-url", "--server", "--json-out", "--output-file", "--results"}


def _options(command) -> dict:
    return {
        name: p
        for p in command.params
        if p.param_type_name == "option"
        for name in (*p.opts, *p.secondary_opts)
    }


def convention_problems(command, writes_a_file: bool, remote_kb: bool, prints_json: bool = True) -> list[str]:
    """What in one command's options breaks the convention (empty: none)."""
    options, problems = _options(command), []
    json_flag = options.get("--json")
    if prints_json and (json_flag is None or not json_flag.is_flag):
        problems.append("--json must be a flag that prints JSON")
    output = options.get("--output")
    if writes_a_file and (output is None or "-o" not in output.opts or output.is_flag):
        problems.append("the file it writes is named by -o/--output PATH")
    if not writes_a_file and ("--output" in options or "-o" in options):
        problems.append("-o/--output on a verb that writes no file")
    kb = options.get("--kb")
    if remote_kb and (kb is None or kb.is_flag or kb.envvar != "KKB_KB_URL"):
        problems.append("the remote knowledge base is --kb URL, with the setting KKB_KB_URL")
    if not remote_kb and kb is not None:
        problems.append("--kb on a verb that has no use for a knowledge base")
    problems += [
        f"{name}: another name for what the convention names" for name in sorted(OTHER_NAMES & set(options))
    ]
    return problems


def test_every_verb_is_classified():
    # a new verb must be placed: does it write a file, can it use a remote knowledge base, does it print JSON
    assert {
        "ingest",
        "search",
        "kernels",
        "documents",
        "facts",
        "prompt",
        "serve",
        "mcp",
        "bench",
        "tune",
        "report",
        "export",
        "export-kernel",
        "sessions",
    } == set(VERBS)
    assert WRITES_A_FILE <= set(VERBS) and REMOTE_KB <= set(VERBS) and set(NO_JSON) <= set(VERBS)


@pytest.mark.parametrize("verb", VERBS)
def test_help_shows_the_convention(verb: str):
    result = CliRunner().invoke(app, [verb, "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    command = COMMANDS.commands[verb]
    assert not convention_problems(command, verb in WRITES_A_FILE, verb in REMOTE_KB, verb not in NO_JSON), (
        verb
    )
    shown = {"--json": verb not in NO_JSON, "--output": verb in WRITES_A_FILE, "--kb": verb in REMOTE_KB}
    for name, expected in shown.items():
        assert (name in result.output) == expected, f"kkb {verb} --help: {name}"
    if verb in NO_JSON:
        assert "--json" not in _options(command)


def test_the_checks_catch_a_verb_off_the_convention():
    # a verb as some were written before: --json naming the file it writes, --url for the server
    old = typer.Typer()

    @old.command()
    def verb(
        json_out: Annotated[Path | None, typer.Option("--json")] = None,
        url: Annotated[str | None, typer.Option("--url")] = None,
    ) -> None:
        """An old verb."""

    problems = convention_problems(typer.main.get_command(old), writes_a_file=True, remote_kb=True)
    assert len(problems) == 4, problems  # --json not a flag, no -o/--output, no --kb, --url
