"""A library kernel as one self-contained source: the shared helpers it imports, inlined.

Usage: source = bundled_source(Path("corpus/kernels/softmax/kernel.py"))
       module = import_bundled(Path("corpus/kernels/softmax/kernel.py"), "test_softmax")

Helpers that several families use live once, in `corpus/kernels/_shared/<name>.py`, and a kernel file
imports them as `from corpus.kernels._shared.<name> import ...` (so the file also imports and lints as it
is, with the repository on sys.path). A candidate is one file, so each such statement is replaced by the
helper module: the imports it needs that the kernel does not already make, then its code, between two
marker comments. Helpers that import helpers are inlined the same way, each module once. The folder is
found from the kernel's own path (`../_shared`), so a copy of the corpus, or the installed package,
bundles the same. Standard library only: benchmarks on a bare GPU box use it too.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import os
import sys
import tempfile
from pathlib import Path

SHARED_PREFIX = "corpus.kernels._shared."


class BundleError(ValueError):
    """A kernel's shared import that cannot be inlined: `path:line: reason`."""

    def __init__(self, path: object, line: int, reason: str):
        self.path, self.line, self.reason = str(path), line, reason
        super().__init__(f"{path}:{line}: {reason}")


def bundled_source(kernel: Path) -> str:
    """The source of `kernel` with its shared helpers inlined (the file's text where it imports none)."""
    return bundle(kernel.read_text(encoding="utf-8"), kernel.resolve().parent.parent / "_shared", str(kernel))


def import_bundled(kernel: Path, prefix: str):
    """The kernel's bundled source imported as a module named from `prefix` and the source's digest (the
    same module again for the same prefix and source), from a file in a temporary folder: Triton reads a
    jit function's source from the file that defines it."""
    source = bundled_source(kernel)
    name = f"{prefix}_{hashlib.sha256(source.encode()).hexdigest()[:10]}"
    if name in sys.modules:
        return sys.modules[name]
    folder = Path(tempfile.gettempdir()) / f"kkb-bundled-{_user()}"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.py"
    if not path.is_file():  # written whole, then renamed: another process may be importing the same file
        partial = folder / f"{name}.{os.getpid()}.tmp"
        partial.write_text(source, encoding="utf-8")
        os.replace(partial, path)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module


def _user() -> str:
    import getpass

    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "anyone"


def bundle(source: str, shared_dir: Path, origin: str = "<kernel>") -> str:
    tree = ast.parse(source, filename=origin)
    if not any(_is_shared(node) for node in tree.body):
        return source
    present = {_text(source, node) for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))}
    lines = source.splitlines(keepends=True)
    out, done, last = [], set(), 0
    for node in tree.body:
        if not _is_shared(node):
            continue
        out.append("".join(lines[last:node.lineno - 1]))
        last = node.end_lineno
        out.append(_inline(node, origin, shared_dir, present, done))
    out.append("".join(lines[last:]))
    return "".join(out)


def _is_shared(node: ast.stmt) -> bool:
    return isinstance(node, ast.ImportFrom) and (node.module or "").startswith(SHARED_PREFIX)


def _text(source: str, node: ast.stmt) -> str:
    return " ".join(ast.get_source_segment(source, node).split())


def _inline(node: ast.ImportFrom, origin: str, shared_dir: Path, present: set[str], done: set[str]) -> str:
    """The code that replaces one `from corpus.kernels._shared.<name> import ...` statement."""
    name = node.module[len(SHARED_PREFIX):]
    path = shared_dir / f"{name}.py"
    if "." in name or not path.is_file():
        raise BundleError(origin, node.lineno, f"imports {node.module}, but {path} does not exist")
    source = path.read_text(encoding="utf-8")
    tree = ast.parse(source, filename=str(path))
    defined = {t.id for n in tree.body for t in _targets(n)} | {
        n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    missing = [a.name for a in node.names if a.name not in defined]
    if missing:
        raise BundleError(origin, node.lineno, f"{path.name} defines no {', '.join(missing)}")
    if name in done:
        return ""
    done.add(name)
    parts = [f"# ---- shared helpers: corpus/kernels/_shared/{name}.py\n"]
    lines = source.splitlines(keepends=True)
    start = 0
    for child in tree.body:  # the docstring and the imports above the code
        is_doc = child is tree.body[0] and isinstance(child, ast.Expr) and isinstance(child.value, ast.Constant)
        if isinstance(child, ast.ImportFrom) and child.module == "__future__":
            raise BundleError(path, child.lineno, "a shared helper cannot use __future__ imports")
        if _is_shared(child):
            parts.append(_inline(child, str(path), shared_dir, present, done))
        elif isinstance(child, (ast.Import, ast.ImportFrom)):
            text = _text(source, child)
            if text not in present:
                present.add(text)
                parts.append(ast.get_source_segment(source, child) + "\n")
        elif not is_doc:
            break
        start = child.end_lineno
    body = "".join(lines[start:]).strip("\n")
    parts.append(f"\n\n{body}\n# ---- end of corpus/kernels/_shared/{name}.py\n")
    return "".join(parts)


def _targets(node: ast.stmt) -> list[ast.Name]:
    if isinstance(node, ast.Assign):
        return [t for t in node.targets if isinstance(t, ast.Name)]
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return [node.target]
    return []
