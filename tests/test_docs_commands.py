"""The `kkb` commands that the docs show exist as written: each verb, and each option it is given.

Usage: .venv/bin/python -m pytest -q tests/test_docs_commands.py
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import typer

from kernelkb_cli import app

REPO = Path(__file__).resolve().parents[1]
DOCS = [REPO / "README.md", REPO / "agent_client" / "README.md", REPO / "harness" / "README.md",
        *sorted((REPO / "docs").glob("*.md"))]


def _commands(text: str) -> list[str]:
    """`kkb ...` spans in backticks, and lines of fenced blocks that start with kkb."""
    found = re.findall(r"`(kkb [^`]+)`", text)
    fenced = False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif fenced and line.startswith("kkb "):
            found.append(line.split("  #")[0])
    return found


def _examples() -> list[tuple[str, str]]:
    return [(doc.relative_to(REPO).as_posix(), cmd) for doc in DOCS if doc.is_file()
            for cmd in _commands(doc.read_text())]


COMMANDS = typer.main.get_command(app)


def test_docs_show_commands():
    assert len(_examples()) >= 10  # the README's table of verbs alone has more


@pytest.mark.parametrize("doc,command", _examples(), ids=lambda v: v if "kkb" in v else "")
def test_command_exists(doc: str, command: str):
    words = command.split()
    if words[1].startswith("-"):  # kkb --version
        assert words[1] in {o for p in COMMANDS.params for o in p.opts}, f"{doc}: `{command}`"
        return
    verb = COMMANDS.commands.get(words[1])
    assert verb is not None, f"{doc}: `{command}`: no verb {words[1]!r}"
    known = {o for p in verb.params for o in (*p.opts, *p.secondary_opts)} | {"--help"}
    for option in re.findall(r"(?<![\w-])(--?[a-z][\w-]*)", " ".join(words[2:])):
        assert option in known, f"{doc}: `{command}`: kkb {words[1]} has no option {option}"
