"""The sessions under KKB_HOME: find one by id or prefix, summarise, list, delete (`kkb sessions`).

Usage: folder = find_session("relu-2026", settings.sessions_dir)     # an id, a unique prefix or a folder
       summaries, unreadable = list_sessions(settings.sessions_dir)
       delete_session(folder)                                         # refuses a session that is running

A summary reads the session's store only (its config, status, nodes and last provider error), so it
works on a session whose process was killed.
"""

from __future__ import annotations

import dataclasses
import shutil
import sqlite3
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from agent_client.session.records import stop_text
from agent_client.session.store import DB_NAME, SessionNotFoundError, SessionStore

ALIVE_S = 120.0  # a running session whose store moved this recently is taken to be alive


@dataclass(frozen=True)
class SessionSummary:
    """One session at a glance."""

    session_id: str  # the name of its folder under the sessions folder: what `kkb tune --resume` takes
    folder: str
    spec: str  # the spec's file name
    target: str
    backend: str
    device: str
    provider: str
    status: str  # "done", or "running" (running now, or its process was killed: --resume continues it)
    stop_reason: str | None  # the short code ("budget", "provider_failed", ...); None while running
    stop_text: str  # the same in plain words, with the provider's last error where it stopped the session
    created_at: float  # unix seconds
    last_seen_s_ago: float  # seconds since the store last moved
    candidates: int  # nodes with a candidate's source
    evaluated: int
    passed: int
    best_node_id: str | None
    best_fitness: float  # speedup over fitness_basis; 0 when nothing passed
    fitness_basis: str | None  # "compile" | "eager"

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


def find_session(session: str, sessions_dir: Path) -> Path:
    """The folder of a session given its id, a unique prefix of it, or its folder; SessionNotFoundError else."""
    given = Path(session).expanduser()
    if (given / DB_NAME).is_file():
        return given
    if (sessions_dir / session / DB_NAME).is_file():
        return sessions_dir / session
    known = _session_folders(sessions_dir)
    matches = [f for f in known if f.name.startswith(session)] if session else []
    if len(matches) == 1:
        return matches[0]
    if matches:
        raise SessionNotFoundError(f"session {session!r}: {len(matches)} sessions start with it "
                                   f"({', '.join(f.name for f in matches[:5])}); give more of the id")
    hint = f"`kkb sessions` lists the {len(known)} there" if known else "there are none there yet"
    raise SessionNotFoundError(f"no session {session!r} under {sessions_dir}; {hint}")


def _session_folders(sessions_dir: Path) -> list[Path]:
    if not sessions_dir.is_dir():
        return []
    return sorted(p for p in sessions_dir.iterdir() if (p / DB_NAME).is_file())


def summarize(folder: Path) -> SessionSummary:
    store = SessionStore.open(folder)
    try:
        config, info, nodes = store.config(), store.info(), store.nodes()
        reason, text = why_stopped(store)
        last_seen = max([store.last_activity(), *[n.created_at for n in nodes]])
    finally:
        store.close()
    outcomes = Counter(n.outcome for n in nodes)
    best = max((n for n in nodes if n.fitness > 0), key=lambda n: (n.fitness, n.id), default=None)
    return SessionSummary(
        session_id=Path(folder).name, folder=str(folder), spec=Path(config.spec_path).name, target=config.target,
        backend=config.backend, device=config.device, provider=config.provider, status=str(info.get("status")),
        stop_reason=reason, stop_text=text, created_at=float(info["created_at"]),
        last_seen_s_ago=max(0.0, time.time() - last_seen),
        candidates=sum(1 for n in nodes if n.code.strip()), evaluated=sum(1 for n in nodes if n.status != "pending"),
        passed=outcomes.get("passed", 0), best_node_id=best.id if best else None,
        best_fitness=best.fitness if best else 0.0, fitness_basis=best.fitness_basis if best else None)


def why_stopped(store: SessionStore) -> tuple[str | None, str]:
    """The stop reason's code (None while not finished) and its plain words, with the provider's last error
    where the provider stopped the session."""
    info = store.info()
    reason = info.get("stop_reason") if info.get("status") == "done" else None
    errors = [r["error"] for r in store.requests() if r.get("error")]
    detail = errors[-1] if reason in ("provider_failed", "provider_exhausted") and errors else None
    return reason, stop_text(reason, detail)


def outcome_text(summary_or_status, text: str | None = None) -> str:
    """"stopped because ..." for a finished session, else what an unfinished one is."""
    status = getattr(summary_or_status, "status", summary_or_status)
    text = getattr(summary_or_status, "stop_text", text)
    return f"stopped because {text}" if status == "done" else str(text)


def list_sessions(sessions_dir: Path) -> tuple[list[SessionSummary], list[str]]:
    """Every session, newest first, and one line for each folder whose store cannot be read."""
    summaries, unreadable = [], []
    for folder in _session_folders(sessions_dir):
        try:
            summaries.append(summarize(folder))
        except (sqlite3.DatabaseError, KeyError, TypeError, ValueError) as exc:
            unreadable.append(f"{folder}: cannot read its store ({type(exc).__name__}: {exc})")
    return sorted(summaries, key=lambda s: -s.created_at), unreadable


def delete_session(folder: Path, force: bool = False) -> SessionSummary:
    """Remove a session's folder (store, report, exports); refuses one that looks alive unless `force`.
    Kernels it wrote back to the library stay there."""
    summary = summarize(folder)
    if summary.status == "running" and summary.last_seen_s_ago < ALIVE_S and not force:
        raise RuntimeError(f"session {summary.session_id} is running (its store moved "
                           f"{summary.last_seen_s_ago:.0f} s ago): stop it first, or pass --force")
    shutil.rmtree(folder)
    return summary
