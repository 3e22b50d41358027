"""scripts/library_table.py: newest row per spec wins, and --drop skips a named (file, spec) row."""

from __future__ import annotations

import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "scripts"))
sys.path.insert(0, str(REPO / "benchmarks"))

from library_table import latest_rows


def _results(path: Path, date: str, latency: float) -> Path:
    path.write_text(json.dumps({"date": date, "rows": [{"family": "gemm", "spec": "tall", "latency_ms": latency}]}))
    return path


def test_newest_row_wins_unless_dropped(tmp_path: Path):
    old = _results(tmp_path / "run-old.json", "2026-11-30T10:00:00Z", 0.138)
    new = _results(tmp_path / "run-new.json", "2026-11-30T12:00:00Z", 0.192)
    [(row, _, f)] = latest_rows([old, new])
    assert row["latency_ms"] == 0.192 and f == new
    [(row, _, f)] = latest_rows([old, new], frozenset({("run-new", "tall")}))
    assert row["latency_ms"] == 0.138 and f == old
