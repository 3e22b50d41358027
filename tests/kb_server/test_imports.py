"""Who may import whom inside the knowledge base (ARCHITECTURE.md): no circles, no ingest in kb_server."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

KB_SERVER = Path(__file__).resolve().parents[2] / "kb_server"


def _imports(path: Path) -> set[str]:
    """Every module a file imports, at the top or inside a function (TYPE_CHECKING blocks included)."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
    return out


def _module(path: Path) -> str:
    return ".".join(path.relative_to(KB_SERVER.parent).with_suffix("").parts)


GRAPH = {_module(p): {m for m in _imports(p) if m.startswith("kb_server")} for p in KB_SERVER.rglob("*.py")}


@pytest.mark.parametrize("module", sorted(m for m in GRAPH if not m.endswith("__init__")))
def test_kb_server_never_imports_ingest(module):
    path = KB_SERVER.parent / (module.replace(".", "/") + ".py")
    assert not {m for m in _imports(path) if m == "ingest" or m.startswith("ingest.")}, module


def test_search_fusion_is_pure():
    assert GRAPH["kb_server.search"] <= {"kb_server.schemas"}


def test_no_import_circles_in_kb_server():
    def reach(start: str) -> set[str]:
        seen, todo = set(), [start]
        while todo:
            for nxt in GRAPH.get(todo.pop(), ()):
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        return seen

    circles = sorted(m for m in GRAPH if m in reach(m))
    assert circles == [], circles
