"""Triton functions the lowering shares with the skill library: a family module's code, pasted into candidates.

Usage: source = library_functions("gemm_epilogue/mainloop")   # its functions, without docstring and imports

The generated GEMM kernels call the gemm_epilogue family's main loop (corpus/kernels/gemm_epilogue/mainloop.py)
instead of writing one of their own, so the loop the library measured is the loop a candidate runs. The module is
read from the checkout's corpus/ folder, or from the installed corpus (the package kernelkb_corpus).
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

from agent_client.lowering.errors import LoweringError


def _corpus_dir() -> Path:
    """The checkout's corpus/ beside agent_client/ (a source tree), else the installed package's."""
    checkout = Path(__file__).resolve().parents[3] / "corpus"
    if (checkout / "kernels").is_dir():
        return checkout
    try:
        from kernelkb_corpus import CORPUS_DIR
    except ImportError as exc:
        raise LoweringError("the skill library's corpus is missing (no corpus/ beside agent_client/, no package "
                            "kernelkb_corpus): the GEMM main loop lives there") from exc
    return Path(CORPUS_DIR)


@cache
def library_functions(module: str) -> str:
    """The code of corpus/kernels/<module>.py after its docstring and imports (which a candidate already has:
    torch, triton, triton.language as tl)."""
    path = _corpus_dir() / "kernels" / f"{module}.py"
    if not path.is_file():
        raise LoweringError(f"{path} does not exist: the lowering's shared Triton code is missing")
    source = path.read_text(encoding="utf-8")
    tree = ast.parse(source, filename=str(path))
    body = [n for n in tree.body if not isinstance(n, (ast.Import, ast.ImportFrom))
            and not (n is tree.body[0] and isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))]
    if not body:
        raise LoweringError(f"{path} holds no code")
    lines = source.splitlines(keepends=True)
    first = min([body[0].lineno] + [d.lineno for d in getattr(body[0], "decorator_list", [])])
    return f"# ---- from corpus/kernels/{module}.py (shared with the skill library)\n" + "".join(lines[first - 1:])
