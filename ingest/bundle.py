"""A library kernel as one self-contained source: the helper modules it imports, inlined.

Usage: source = bundled_source(Path("corpus/kernels/softmax/kernel.py"))
       module = import_bundled(Path("corpus/kernels/softmax/kernel.py"), "test_softmax")

Helpers that several families use live once, in `corpus/kernels/_shared/<name>.py`, and a family's kernel
may keep a part of itself in a module of its folder (`corpus/kernels/<family>/<name>.py`). A kernel file
imports them as `from corpus.kernels.<folder>.<name> import ...` (so the file also imports and lints as it
is, with the repository on sys.path). A candidate is one file, so each such statement is replaced by the
module: the imports it needs that the kernel does not already make, then its code, between two marker
comments. Modules that import modules are inlined the same way, each once. The folders are found from the
kernel's own path (`..`), so a copy of the corpus, or the installed package, bundles the same. Standard
library only (import_bundled imports through the harness): benchmarks on a bare CUDA machine use it too.
"""

from __future__ import annotations

import ast
import hashlib
import os
import tempfile
from pathlib import Path

MODULE_PREFIX = "corpus.kernels."


class BundleError(ValueError):
    """A kernel's module import that cannot be inlined: `path:line: reason`."""

    def __init__(self, path: object, line: int, reason: str):
        self.path, self.line, self.reason = str(path), line, reason
        super().__init__(f"{path}:{line}: {reason}")


def bundled_source(kernel: Path) -> str:
    """The source of `kernel` with its helper modules inlined (the file's text where it imports none)."""
    return bundle(kernel.read_text(encoding="utf-8"), kernel.resolve().parent.parent, str(kernel))


def import_bundled(kernel: Path, prefix: str):
    """The kernel's bundled source imported as a module named from `prefix` and the source's digest (the
    same module again for the same prefix and source), from a file in a temporary folder: Triton reads a
    jit function's source from the file that defines it."""
    from harness.spec import import_file

    source = bundled_source(kernel)
    name = f"{prefix}_{hashlib.sha256(source.encode()).hexdigest()[:10]}"
    folder = Path(tempfile.gettempdir()) / f"kkb-bundled-{_user()}"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.py"
    if not path.is_file():  # written whole, then renamed: another process may be importing the same file
        partial = folder / f"{name}.{os.getpid()}.tmp"
        partial.write_text(source, encoding="utf-8")
        os.replace(partial, path)
    return import_file(path, prefix)


def _user() -> str:
    import getpass

    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "anyone"


def library_dir() -> Path:
    """The library that ships with kernelkb: `kernels/` of the installed corpus package, or of the checkout's."""
    try:
        from kernelkb_corpus import CORPUS_DIR
    except ImportError:
        from corpus import CORPUS_DIR
    return Path(CORPUS_DIR) / "kernels"


def bundle(source: str, kernels_dir: Path | None = None, origin: str = "<kernel>") -> str:
    """`source` with its `corpus.kernels.*` imports inlined from `kernels_dir` (default: library_dir()); a
    source that imports none (already bundled, or self-contained) comes back unchanged."""
    tree = ast.parse(source, filename=origin)
    if not any(_is_shared(node) for node in tree.body):
        return source
    kernels_dir = kernels_dir or library_dir()
    present = {_text(source, node) for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))}
    lines = source.splitlines(keepends=True)
    out, done, last = [], set(), 0
    for node in tree.body:
        if not _is_shared(node):
            continue
        out.append("".join(lines[last:node.lineno - 1]))
        last = node.end_lineno
        out.append(_inline(node, origin, kernels_dir, present, done))
    out.append("".join(lines[last:]))
    return "".join(out)


def _is_shared(node: ast.stmt) -> bool:
    return isinstance(node, ast.ImportFrom) and (node.module or "").startswith(MODULE_PREFIX)


def _text(source: str, node: ast.stmt) -> str:
    return " ".join(ast.get_source_segment(source, node).split())


def _inline(node: ast.ImportFrom, origin: str, kernels_dir: Path, present: set[str], done: set[str]) -> str:
    """The code that replaces one `from corpus.kernels.<folder>.<name> import ...` statement."""
    name = node.module[len(MODULE_PREFIX):]
    parts = name.split(".")
    path = kernels_dir.joinpath(*parts[:-1], f"{parts[-1]}.py")
    if len(parts) != 2 or parts[1] == "kernel":
        raise BundleError(origin, node.lineno, f"imports {node.module}: only corpus.kernels.<folder>.<module> "
                          "modules other than a family's kernel.py are inlined")
    if not path.is_file():
        raise BundleError(origin, node.lineno, f"imports {node.module}, but {path} does not exist")
    source = path.read_text(encoding="utf-8")
    tree = ast.parse(source, filename=str(path))
    defined = _bound_names(tree.body)
    missing = [a.name for a in node.names if a.name not in defined]
    if missing:
        raise BundleError(origin, node.lineno, f"{path.name} defines no {', '.join(missing)}")
    if name in done:
        return ""
    done.add(name)
    where = "corpus/kernels/" + "/".join(parts) + ".py"
    pieces = [f"# ---- inlined from {where}\n"]
    lines = source.splitlines(keepends=True)
    start = 0
    for child in tree.body:  # the docstring and the imports above the code
        is_doc = child is tree.body[0] and isinstance(child, ast.Expr) and isinstance(child.value, ast.Constant)
        if isinstance(child, ast.ImportFrom) and child.module == "__future__":
            raise BundleError(path, child.lineno, "a shared helper cannot use __future__ imports")
        if _is_shared(child):
            pieces.append(_inline(child, str(path), kernels_dir, present, done))
        elif isinstance(child, (ast.Import, ast.ImportFrom)):
            text = _text(source, child)
            if text not in present:
                present.add(text)
                pieces.append(ast.get_source_segment(source, child) + "\n")
        elif not is_doc:
            break
        start = child.end_lineno
    body = "".join(lines[start:]).strip("\n")
    pieces.append(f"\n\n{body}\n# ---- end of {where}\n")
    return "".join(pieces)


def _bound_names(body: list[ast.stmt]) -> set[str]:
    """The names a module's top level binds: assignments, definitions and imports, inside try and if blocks too."""
    names: set[str] = set()
    for node in body:
        if isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.Try):
            names |= _bound_names(node.body + node.orelse + node.finalbody)
            for handler in node.handlers:
                names |= _bound_names(handler.body)
        elif isinstance(node, ast.If):
            names |= _bound_names(node.body + node.orelse)
    return names
