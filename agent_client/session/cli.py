"""The `kkb sessions` verb: list the tuning sessions under KKB_HOME, show one, delete one.

Usage: kkb sessions [--json]                       # every session, newest first
       kkb sessions show SESSION_ID [--json]       # one session: settings, why it stopped, its candidates
       kkb sessions SESSION_ID                     # the same
       kkb sessions delete SESSION_ID [--yes]      # its folder (store, report, exports); library kernels stay

A session is named by its id, a unique prefix of it, or its folder.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

ACTIONS = ("list", "show", "delete")


def sessions(
    action: Annotated[str, typer.Argument(help="list | show | delete")] = "list",
    session: Annotated[str | None, typer.Argument(help="with show or delete: the session's id, a unique prefix "
                                                       "of it, or its folder")] = None,
    home: Annotated[Path | None, typer.Option(help="KKB_HOME (store and sessions)")] = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="with delete: do not ask")] = False,
    force: Annotated[bool, typer.Option(help="with delete: even a session that looks like it is running")
                     ] = False,
    json_out: Annotated[bool, typer.Option("--json", help="print the sessions (or the one) as JSON")] = False,
) -> None:
    """List the tuning sessions, show one (its settings, why it stopped, its candidates) or delete one."""
    from agent_client.cli_settings import settings_or_exit
    from agent_client.session.catalog import SessionNotFoundError, find_session

    settings = settings_or_exit(home)
    if action not in ACTIONS:
        try:  # `kkb sessions ID` shows that session
            folder = find_session(action, settings.sessions_dir) if session is None else None
        except SessionNotFoundError:
            folder = None
        if folder is None:
            raise typer.BadParameter(f"{action!r} is not one of {', '.join(ACTIONS)} (nor a session id)",
                                     param_hint="ACTION")
        _show(folder, json_out)
        return
    if action == "list":
        if session is not None:
            raise typer.BadParameter(f"{session!r}: `kkb sessions` lists them all; for one, `kkb sessions show "
                                     f"{session}`", param_hint="SESSION")
        _list(settings.sessions_dir, json_out)
        return
    if not session:
        raise typer.BadParameter(f"`kkb sessions {action}` needs a session id (`kkb sessions` lists them)",
                                 param_hint="SESSION")
    try:
        folder = find_session(session, settings.sessions_dir)
    except SessionNotFoundError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    if action == "show":
        _show(folder, json_out)
    else:
        _delete(folder, yes, force, json_out)


def _when(seconds: float) -> str:
    return dt.datetime.fromtimestamp(seconds, dt.UTC).strftime("%Y-%m-%d %H:%M UTC")


def _best(summary) -> str:
    from agent_client.session.records import speedup_text

    if not summary.best_node_id:
        return "none passed"
    basis = {"compile": "torch.compile", "eager": "eager"}.get(summary.fitness_basis or "", "?")
    return f"{speedup_text(summary.best_fitness)} over {basis} ({summary.best_node_id})"


def _list(sessions_dir: Path, json_out: bool) -> None:
    from agent_client.session.catalog import list_sessions, outcome_text

    summaries, unreadable = list_sessions(sessions_dir)
    for line in unreadable:
        typer.echo(f"warning: {line}", err=True)
    if json_out:
        typer.echo(json.dumps({"sessions_dir": str(sessions_dir), "sessions": [s.to_dict() for s in summaries]},
                              indent=2))
        return
    if not summaries:
        typer.echo(f"no sessions under {sessions_dir} (`kkb tune SPEC` starts one)")
        return
    typer.echo(f"{len(summaries)} sessions under {sessions_dir}, newest first:")
    for s in summaries:  # two lines each: readable on any width, the id whole (what show and delete take)
        typer.echo(f"{s.session_id}  {Path(s.spec).stem} for {s.target} ({s.backend} on {s.device}, {s.provider}); "
                   f"{s.passed} of {s.candidates} candidates passed, best {_best(s)}")
        typer.echo(f"    {_when(s.created_at)}: {outcome_text(s)}")


def _show(folder: Path, json_out: bool) -> None:
    from agent_client.session.catalog import outcome_text, summarize
    from agent_client.session.records import conclusion, interpreter_note, speedup_text
    from agent_client.session.resume import runs_text
    from agent_client.session.store import SessionStore

    summary = summarize(folder)
    store = SessionStore.open(folder)
    try:
        config, nodes, runs = store.config(), store.nodes(), store.runs()
    finally:
        store.close()
    rows = [{"id": n.id, "kind": n.kind, "parents": n.parent_ids, "outcome": n.outcome,
             "fitness": n.fitness, "fitness_basis": n.fitness_basis,
             "reason": "; ".join((n.verdict or {}).get("reasons") or [])[:300]} for n in nodes]
    best = max((n for n in nodes if n.fitness > 0), key=lambda n: (n.fitness, n.id), default=None)
    if json_out:
        typer.echo(json.dumps({**summary.to_dict(), "command": config.command, "budget": config.budget,
                               "policy": config.policy, "conclusion": conclusion(best, nodes), "nodes": rows,
                               "runs": [{"started_at": r["started_at"], "endpoint": r["endpoint"]} for r in runs]},
                              indent=2))
        return
    typer.echo(f"session {summary.session_id}  ({folder})")
    typer.echo(f"spec {summary.spec}; target {summary.target}; backend {summary.backend}; device {summary.device}; "
               f"provider {summary.provider}; policy {config.policy}; budget {config.budget}")
    typer.echo(f"created {_when(summary.created_at)}; {outcome_text(summary)}")
    if runs_text(runs):  # how each run reached the model: a resume may have changed it
        typer.echo(f"reached {runs_text(runs)}")
    typer.echo(f"candidates {summary.candidates} ({summary.passed} passed); best {_best(summary)}")
    if interpreter_note(summary.device):
        typer.echo(f"note: {interpreter_note(summary.device)}")
    typer.echo(conclusion(best, nodes))
    if rows:
        table = Table("node", "kind", "parent", "outcome", "speedup", "reason")
        for r in rows:
            table.add_row(r["id"], r["kind"], ",".join(r["parents"]) or "-", r["outcome"],
                          speedup_text(r["fitness"]) if r["fitness"] > 0 else "-", r["reason"][:120])
        Console().print(table)
    if (folder / "report.html").is_file():
        typer.echo(f"report: {folder / 'report.html'}")


def _delete(folder: Path, yes: bool, force: bool, json_out: bool) -> None:
    from agent_client.session.catalog import delete_session, summarize

    summary = summarize(folder)
    if not yes:
        typer.confirm(f"delete session {summary.session_id} ({summary.candidates} candidates) and its folder "
                      f"{folder}?", abort=True, err=True)
    try:
        delete_session(folder, force=force)
    except RuntimeError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    if json_out:
        typer.echo(json.dumps({"deleted": summary.session_id, "folder": str(folder)}))
    else:
        typer.echo(f"deleted session {summary.session_id} ({folder}); kernels it wrote to the library stay there")
