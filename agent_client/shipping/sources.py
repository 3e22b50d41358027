"""Where an export comes from: a session's best passing candidate, or a kernel record of the library.

Usage: plan = plan_from_session(SessionStore.open(folder))            # the best passing node
       plan = plan_from_record(record, sessions_dir, spec_path=None)   # a record a session wrote back

A record names the session and node that wrote it; when that session is on this machine the export reads
the node's verdict and the spec from it. Otherwise the spec must be given (`--spec`), and the record's own
measurements (written back with their shapes) make the dispatch table.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

from agent_client.measurements import Measured, measured_from_record, measured_from_verdict
from agent_client.shipping.plan import ExportError, ExportPlan, build_plan

_REFERENCE_MARK = "# ---- the reference module, as written"


def best_passing(nodes: list) -> object | None:
    """The passing node with the highest fitness (the earliest among equals); None when none passed."""
    passed = sorted((n for n in nodes if n.outcome == "passed"), key=lambda n: n.id)
    return max(passed, key=lambda n: n.fitness, default=None)  # max keeps the first of equals


def _check_spec(spec_path: Path, code: str, where: str) -> None:
    from agent_client.lowering.emit import spec_body

    if not spec_path.is_file():
        raise ExportError(f"{where}: its spec {spec_path} is gone; give the spec with --spec")
    if _REFERENCE_MARK in code and spec_body(spec_path.read_text(encoding="utf-8")) not in code:
        raise ExportError(f"{where}: the spec {spec_path} changed since the candidate was made (its Model is not "
                          "the one in the candidate); give the spec it was judged on with --spec")


def plan_from_session(store, node_id: str | None = None, min_speedup: float = 1.0,
                      spec_path: Path | None = None) -> ExportPlan:
    config, nodes = store.config(), store.nodes()
    sid = config.session_id
    if node_id is None:
        node = best_passing(nodes)
        if node is None:
            outcomes = Counter(n.outcome for n in nodes)
            summary = ", ".join(f"{k} {v}" for k, v in sorted(outcomes.items())) or "no candidates"
            raise ExportError(f"session {sid} has no passing candidate ({summary}): nothing to export")
    else:
        node = next((n for n in nodes if n.id == node_id), None)
        if node is None or node.outcome != "passed":
            raise ExportError(f"session {sid} has no passing node {node_id!r}")
    where = f"session {sid} node {node.id}"
    rows = measured_from_verdict(node.verdict or {}, source=f"kkb tune session {sid} node {node.id}")
    if not rows:
        raise ExportError(f"{where}: its verdict names no shapes (judged before verdicts recorded them); judge it "
                          "again with kkb bench, or tune again")
    spec = Path(spec_path or config.spec_path)
    _check_spec(spec, node.code, where)
    info = {"source": where, "route": node.meta.get("route") or config.provider,
            "route_id": node.meta.get("route_id") or "", "options": dict(node.meta.get("options") or {}),
            "session_device": config.device, "target": config.target, "backend": config.backend}
    return build_plan(spec, node.code, rows, info, min_speedup)


_WRITER = re.compile(r"kkb tune session (\S+) \(node (n\d+)\)")


def plan_from_record(record, sessions_dir: Path, spec_path: Path | None = None,
                     min_speedup: float = 1.0) -> ExportPlan:
    from agent_client.session.store import SessionStore

    found = _WRITER.search(record.description or "")
    folder = Path(sessions_dir) / found.group(1) if found else None
    if folder is not None and (folder / "session.sqlite").exists():
        store = SessionStore.open(folder)
        try:
            return plan_from_session(store, found.group(2), min_speedup, spec_path)
        finally:
            store.close()
    if spec_path is None:
        said = f"session {found.group(1)}, which is not under {sessions_dir}" if found else "no session"
        raise ExportError(f"record {record.id} was written by {said}: give the spec it was judged on with --spec")
    rows: list[Measured] = measured_from_record(record)
    if not rows:
        raise ExportError(f"record {record.id} has no measurement that names its shapes: nothing to dispatch on")
    _check_spec(Path(spec_path), record.source, f"record {record.id}")
    info = {"source": f"kernel record {record.id} ({record.name})", "route": "library record", "route_id": record.id,
            "options": {}, "backend": record.backend}
    return build_plan(Path(spec_path), record.source, rows, info, min_speedup)
