"""Adapt a library kernel to a spec: the spec's constructor, the library's kernel, a generated forward.

Usage: code = adapt(library_source, spec_source, signature, forward_lines)

A candidate must build the same parameters as the reference under the same seed, so the adapter
keeps the spec's `Model.__init__` verbatim (as a person writing `ModelNew` would) and the module-level
imports and constants it may need. The forward is generated from the traced op signature and calls
only the library's launchers; the spec's own forward is never copied or called.
"""

from __future__ import annotations

import ast
import textwrap

_SPEC_ONLY = {"get_inputs", "get_init_inputs", "get_variants", "VARIANTS", "Model"}


class AdaptError(ValueError):
    """The spec cannot be adapted to a library kernel (the message says why)."""


def _is_constant_assign(node: ast.stmt) -> bool:
    if not isinstance(node, (ast.Assign, ast.AnnAssign)):
        return False
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    names = [t.id for t in targets if isinstance(t, ast.Name)]
    if not names or any(n in _SPEC_ONLY for n in names):
        return False
    # keep literals and simple expressions of names (shape constants, dtypes); drop lambdas/tables
    return not any(isinstance(n, (ast.Lambda, ast.Dict, ast.DictComp)) for n in ast.walk(node.value))


def spec_parts(spec_source: str) -> tuple[str, str]:
    """(header, init): the spec's imports and constants, and its Model.__init__ source."""
    tree = ast.parse(spec_source)
    header, init = [], None
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)) or _is_constant_assign(node):
            header.append(ast.get_source_segment(spec_source, node))
        elif isinstance(node, ast.ClassDef) and node.name == "Model":
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == "__init__":
                    init = textwrap.dedent(ast.get_source_segment(spec_source, item))
    if init is None:
        init = "def __init__(self, *args, **kwargs):\n    super().__init__()"
    return "\n".join(h for h in header if h), init


def adapt(library_source: str, spec_source: str, forward_lines: list[str], note: str) -> str:
    """A complete candidate: library kernel (its ModelNew renamed), spec constructor, generated forward."""
    library = library_source.replace("class ModelNew(", "class _LibraryModelNew(")
    header, init = spec_parts(spec_source)
    body = "\n".join("        " + line for line in forward_lines)
    return (
        f"{library.rstrip()}\n\n\n"
        f"# ---- adapter (kernelkb offline provider): {note}\n"
        f"{header}\n\n\n"
        "class ModelNew(nn.Module):\n"
        f"{textwrap.indent(init, '    ')}\n\n"
        "    def forward(self, *inputs):\n"
        f"{body}\n"
    )
