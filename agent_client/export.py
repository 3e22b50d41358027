"""Export a session as JSONL for training smaller kernel models.

Usage: kkb export SESSION_ID [-o FILE]
       rows = export_rows(store); write_jsonl(rows, path)
       datasets.load_dataset("json", data_files=path)     # loads as is; so does TRL

One row per evaluated node: the prompt and system text that produced it, the raw response, the
candidate code, the reward (the measured speedup over the baseline; 0 unless correct), the
correctness, the verdict's reasons and diagnostics, and `messages` in chat format (system, user,
assistant) plus `prompt`/`completion` for TRL's trainers. Every row has the same columns and types
(diagnostics as a JSON string, since its keys differ between verdicts).
"""

from __future__ import annotations

import json
from pathlib import Path

from agent_client.session.store import SessionStore


def export_rows(store: SessionStore) -> list[dict]:
    config = store.config()
    requests = {r["step"]: r for r in store.requests()}
    rows = []
    for node in store.nodes():
        if node.status == "pending":
            continue
        request = requests.get(node.step, {})
        v = node.verdict or {}
        system, prompt = request.get("system", ""), request.get("prompt", "")
        correct = v.get("status") == "passed"
        rows.append({
            "session_id": config.session_id, "node_id": node.id, "parent_ids": list(node.parent_ids),
            "kind": node.kind, "spec": Path(config.spec_path).stem, "backend": config.backend,
            "target": config.target, "device": config.device, "provider": config.provider,
            "system": system, "prompt": prompt, "completion": node.response, "response": node.response,
            "code": node.code, "status": str(v.get("status", node.status)), "correct": correct,
            "reward": float(node.fitness) if correct else 0.0,
            "reward_basis": node.fitness_basis or "",
            "speedup_vs_eager": _float(v.get("speedup_vs_eager")),
            "speedup_vs_compile": _float(v.get("speedup_vs_compile")),
            "latency_ms": _float(v.get("latency_ms")),
            "reasons": [str(r) for r in (v.get("reasons") or [])],
            "diagnostics": json.dumps(v.get("diagnostics") or {}, default=str, sort_keys=True),
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": prompt},
                         {"role": "assistant", "content": node.response}],
        })
    return rows


def _float(value) -> float | None:
    return None if value is None else float(value)


def write_jsonl(rows: list[dict], path: Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as out:
        for row in rows:
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
    return path
