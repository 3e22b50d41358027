"""The agent client's settings for its verbs (tune, report, export, sessions, export-kernel).

Usage: settings = settings_or_exit(home)    # a refused value: one line naming its variable, exit status 2
"""

from __future__ import annotations

from pathlib import Path

import typer

from agent_client.config import ClientSettings, SettingsError, load_settings

BAD_INPUT = 2  # the exit status of a bad argument or setting, in every verb


def settings_or_exit(home: Path | None) -> ClientSettings:
    """The settings, or exit 2 with one line naming the variable whose value is refused."""
    try:
        return load_settings(home=home)
    except SettingsError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(BAD_INPUT) from None
