"""No import circles between our packages, nor between the modules and subpackages inside one.

Usage: .venv/bin/python -m pytest -q tests/test_imports.py

The graph is static (every import statement, those inside functions too, since a lazy import is still a
dependency). Inside a package a subpackage counts as one unit (agent_client.session, kb_server.api), so
two subpackages that import each other form a circle even where no single module does.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("agent_client", "harness", "ingest", "kb_server")
# Circles whose removal belongs to the knowledge-base server's own change (the search module's fusion made
# pure, the ingest route's ingestor handed in where `kkb serve` is assembled). Once it lands, empty this.
KNOWN: set[frozenset] = set()


@functools.cache
def _modules() -> dict[str, Path]:
    out = {}
    for top in PACKAGES:
        for path in (REPO / top).rglob("*.py"):
            parts = list(path.relative_to(REPO).with_suffix("").parts)
            out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def _imported(module: str, path: Path, known: dict[str, Path]) -> set[str]:
    """Our modules that `module` imports (absolute and relative imports, resolved to the longest known name)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                head = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join(head + ([node.module] if node.module else []))
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
    out = set()
    for name in names:
        while name and name not in known:
            name = name.rpartition(".")[0]
        if name:
            out.add(name)
    return out


@functools.cache
def _module_edges() -> dict[str, set[str]]:
    modules = _modules()
    return {module: _imported(module, path, modules) for module, path in modules.items()}


def _graph(unit) -> dict[str, set[str]]:
    edges: dict[str, set[str]] = {}
    for module, targets in _module_edges().items():
        for target in targets:
            if unit(target) != unit(module):
                edges.setdefault(unit(module), set()).add(unit(target))
    return edges


def _circles(edges: dict[str, set[str]]) -> list[frozenset[str]]:
    """Strongly connected components of more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(frozenset(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


@functools.cache
def _subpackages() -> frozenset[str]:
    return frozenset(m for m, p in _modules().items() if p.name == "__init__.py" and m.count(".") == 1)


def _inside(module: str) -> str:
    parts = module.split(".")
    return ".".join(parts[:2]) if ".".join(parts[:2]) in _subpackages() else module


def _package(module: str) -> str:
    return module.split(".")[0]


@pytest.mark.parametrize("level,unit", [("package", _package), ("module", _inside)], ids=["packages", "modules"])
def test_no_import_circles(level: str, unit):
    circles = [c for c in _circles(_graph(unit)) if c not in KNOWN]
    assert not circles, f"import circles between {level}s: {[sorted(c) for c in circles]}"


def test_the_check_finds_a_circle():
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [frozenset({"a", "b", "c"})]
    assert _circles({"a": {"b"}, "b": set()}) == []


def test_session_and_providers_meet_only_through_proposals():
    edges = _graph(_inside)
    assert "agent_client.providers" not in edges.get("agent_client.session", set())
    assert "agent_client.proposals" in edges["agent_client.session"]
