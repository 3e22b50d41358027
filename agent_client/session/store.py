"""The SQLite record of one session: its config, every provider request, node and evaluation.

Usage: store = SessionStore.create(sessions_dir / session_id, config)
       store = SessionStore.open(sessions_dir / session_id)        # --resume, report, export

WAL mode, one connection per store guarded by a lock (the loop's evaluation threads update nodes).
A node is inserted with status "pending" before its evaluation and updated, in one transaction
with its evaluation row, afterwards: a session killed at any point loses no evaluated candidate.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from pathlib import Path

from agent_client.session.records import Node, SessionConfig

DB_NAME = "session.sqlite"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS session (
    id TEXT PRIMARY KEY, config TEXT NOT NULL, created_at REAL NOT NULL,
    status TEXT NOT NULL, stop_reason TEXT, updated_at REAL);
CREATE TABLE IF NOT EXISTS requests (
    step INTEGER PRIMARY KEY, kind TEXT NOT NULL, parent_id TEXT, system TEXT NOT NULL, prompt TEXT NOT NULL,
    cache_prefix_chars INTEGER NOT NULL DEFAULT 0, provider TEXT NOT NULL, n INTEGER NOT NULL,
    created_at REAL NOT NULL, error TEXT, sources TEXT);
CREATE TABLE IF NOT EXISTS nodes (
    id TEXT PRIMARY KEY, step INTEGER NOT NULL, parent_ids TEXT NOT NULL, kind TEXT NOT NULL,
    code TEXT NOT NULL, response TEXT NOT NULL, meta TEXT NOT NULL, status TEXT NOT NULL,
    verdict TEXT, fitness REAL NOT NULL DEFAULT 0, fitness_basis TEXT,
    created_at REAL NOT NULL, evaluated_at REAL);
CREATE TABLE IF NOT EXISTS evaluations (
    id INTEGER PRIMARY KEY AUTOINCREMENT, node_id TEXT NOT NULL, started_at REAL NOT NULL,
    finished_at REAL NOT NULL, verdict TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT, started_at REAL NOT NULL, last_seen REAL NOT NULL, endpoint TEXT);
"""


class SessionNotFoundError(FileNotFoundError):
    """No session folder/record at the given place; the message names it."""


class SessionStore:
    def __init__(self, folder: Path):
        self.folder = Path(folder)
        self.path = self.folder / DB_NAME
        self._lock = threading.RLock()
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._db.row_factory = sqlite3.Row
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(_SCHEMA)
        columns = {row["name"] for row in self._db.execute("PRAGMA table_info(requests)")}
        if "sources" not in columns:  # a session recorded before prompts noted their sources
            self._db.execute("ALTER TABLE requests ADD COLUMN sources TEXT")
        if "endpoint" not in {row["name"] for row in self._db.execute("PRAGMA table_info(runs)")}:
            self._db.execute("ALTER TABLE runs ADD COLUMN endpoint TEXT")  # recorded before runs noted it

    # -- life cycle
    @classmethod
    def create(cls, folder: Path, config: SessionConfig) -> SessionStore:
        folder = Path(folder)
        if (folder / DB_NAME).exists():
            raise FileExistsError(f"session {config.session_id!r} already exists at {folder}; use --resume")
        folder.mkdir(parents=True, exist_ok=True)
        store = cls(folder)
        now = time.time()
        with store._tx():
            store._db.execute(
                "INSERT INTO session (id, config, created_at, status, updated_at) VALUES (?,?,?,?,?)",
                (config.session_id, config.to_json(), now, "running", now))
        (folder / "config.json").write_text(config.to_json() + "\n", encoding="utf-8")
        return store

    @classmethod
    def open(cls, folder: Path) -> SessionStore:
        if not (Path(folder) / DB_NAME).exists():
            raise SessionNotFoundError(f"no session at {folder} (missing {DB_NAME}); see `ls {Path(folder).parent}`")
        return cls(Path(folder))

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def _tx(self):
        store = self

        class _Tx:
            def __enter__(self):
                store._lock.acquire()
                store._db.execute("BEGIN IMMEDIATE")

            def __exit__(self, exc_type, *_):
                try:
                    store._db.execute("ROLLBACK" if exc_type else "COMMIT")
                finally:
                    store._lock.release()

        return _Tx()

    # -- session row
    def config(self) -> SessionConfig:
        with self._lock:
            row = self._db.execute("SELECT config FROM session").fetchone()
        return SessionConfig.from_json(row["config"])

    def info(self) -> dict:
        with self._lock:
            row = self._db.execute("SELECT * FROM session").fetchone()
        return dict(row)

    def set_config(self, config: SessionConfig) -> None:
        """Replace the stored config (a resume that changed how the model is reached, or the budgets)."""
        with self._tx():
            self._db.execute("UPDATE session SET config=?, updated_at=?", (config.to_json(), time.time()))
        (self.folder / "config.json").write_text(config.to_json() + "\n", encoding="utf-8")

    def set_status(self, status: str, stop_reason: str | None = None) -> None:
        with self._tx():
            self._db.execute("UPDATE session SET status=?, stop_reason=?, updated_at=?",
                             (status, stop_reason, time.time()))

    # -- requests
    # -- runs: one row per `kkb tune` process working on the session (the first run and each --resume);
    # last_seen is moved on as the run works, so a killed run's wall time still counts against the budget;
    # endpoint is how that run reached the model ({"model":..., "base_url":...}; None for offline and replay)
    def begin_run(self, endpoint: dict | None = None) -> int:
        now = time.time()
        with self._tx():
            cur = self._db.execute("INSERT INTO runs (started_at, last_seen, endpoint) VALUES (?,?,?)",
                                   (now, now, None if endpoint is None else json.dumps(endpoint)))
        return int(cur.lastrowid)

    def runs(self) -> list[dict]:
        """Every run in order: id, started_at, last_seen, endpoint (decoded; None where not recorded)."""
        with self._lock:
            rows = [dict(r) for r in self._db.execute("SELECT * FROM runs ORDER BY id")]
        for row in rows:
            row["endpoint"] = json.loads(row["endpoint"]) if row.get("endpoint") else None
        return rows

    def touch_run(self, run_id: int) -> None:
        with self._tx():
            self._db.execute("UPDATE runs SET last_seen = ? WHERE id = ?", (time.time(), run_id))

    def spent_s(self, exclude_run: int | None = None) -> float:
        """Wall seconds of the session's runs so far (without `exclude_run`, usually the current one)."""
        with self._lock:
            row = self._db.execute("SELECT COALESCE(SUM(last_seen - started_at), 0) FROM runs WHERE id IS NOT ?",
                                   (exclude_run,)).fetchone()
        return float(row[0])

    def last_activity(self) -> float:
        """Unix seconds of the latest write a run made (its heartbeat, a verdict, a status change)."""
        with self._lock:
            row = self._db.execute("SELECT MAX(t) FROM (SELECT MAX(last_seen) AS t FROM runs UNION ALL "
                                   "SELECT updated_at FROM session UNION ALL SELECT MAX(evaluated_at) FROM nodes)"
                                   ).fetchone()
        return float(row[0] or 0.0)

    def next_step(self) -> int:
        with self._lock:
            row = self._db.execute("SELECT MAX(step) AS m FROM requests").fetchone()
        return 0 if row["m"] is None else int(row["m"]) + 1

    def add_request(self, step: int, kind: str, parent_id: str | None, system: str, prompt: str,
                    cache_prefix_chars: int, provider: str, n: int, sources: dict | None = None) -> None:
        """One provider request; `sources` maps each knowledge section of its prompt to the sources it used."""
        with self._tx():
            self._db.execute(
                "INSERT INTO requests (step, kind, parent_id, system, prompt, cache_prefix_chars, provider, n, "
                "created_at, error, sources) VALUES (?,?,?,?,?,?,?,?,?,NULL,?)",
                (step, kind, parent_id, system, prompt, cache_prefix_chars, provider, n, time.time(),
                 None if sources is None else json.dumps(sources)))

    def set_request_error(self, step: int, error: str) -> None:
        with self._tx():
            self._db.execute("UPDATE requests SET error=? WHERE step=?", (error, step))

    def requests(self) -> list[dict]:
        """Every request in order; `sources` decoded ({} for requests recorded without them)."""
        with self._lock:
            rows = [dict(r) for r in self._db.execute("SELECT * FROM requests ORDER BY step")]
        for row in rows:
            row["sources"] = json.loads(row["sources"]) if row.get("sources") else {}
        return rows

    # -- nodes
    def next_node_id(self) -> str:
        with self._lock:
            row = self._db.execute("SELECT COUNT(*) AS c FROM nodes").fetchone()
        return f"n{int(row['c']):04d}"

    def insert_node(self, node: Node) -> None:
        with self._tx():
            self._db.execute(
                "INSERT INTO nodes VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (node.id, node.step, json.dumps(node.parent_ids), node.kind, node.code, node.response,
                 json.dumps(node.meta, default=str), node.status,
                 None if node.verdict is None else json.dumps(node.verdict, default=str),
                 node.fitness, node.fitness_basis, node.created_at, node.evaluated_at))

    def record_evaluation(self, node: Node, started_at: float) -> None:
        """Store a node's verdict and its evaluation row in one committed transaction."""
        verdict = json.dumps(node.verdict, default=str)
        with self._tx():
            self._db.execute(
                "UPDATE nodes SET status=?, verdict=?, fitness=?, fitness_basis=?, evaluated_at=? WHERE id=?",
                (node.status, verdict, node.fitness, node.fitness_basis, node.evaluated_at, node.id))
            self._db.execute(
                "INSERT INTO evaluations (node_id, started_at, finished_at, verdict) VALUES (?,?,?,?)",
                (node.id, started_at, node.evaluated_at or time.time(), verdict))

    def nodes(self) -> list[Node]:
        with self._lock:
            rows = self._db.execute("SELECT * FROM nodes ORDER BY id").fetchall()
        return [_node(r) for r in rows]

    def evaluations(self) -> list[dict]:
        with self._lock:
            return [dict(r) for r in self._db.execute("SELECT * FROM evaluations ORDER BY id")]


def _node(row: sqlite3.Row) -> Node:
    return Node(
        id=row["id"], step=row["step"], parent_ids=json.loads(row["parent_ids"]), kind=row["kind"],
        code=row["code"], response=row["response"], meta=json.loads(row["meta"]), status=row["status"],
        verdict=None if row["verdict"] is None else json.loads(row["verdict"]), fitness=row["fitness"],
        fitness_basis=row["fitness_basis"], created_at=row["created_at"], evaluated_at=row["evaluated_at"])
