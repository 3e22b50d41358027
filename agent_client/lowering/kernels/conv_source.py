"""The conv family's mainloop as the lowering uses it: the functions of corpus/kernels/conv/implicit_gemm.py,
pasted once into a candidate, so a generated convolution runs the library's own mainloop.

Usage: source = mainloop_source(); g, v = gcd_inverse(dilation, stride)
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

try:  # an installed wheel ships the corpus as kernelkb_corpus, a checkout as corpus
    from kernelkb_corpus.kernels.conv import implicit_gemm
except ImportError:
    from corpus.kernels.conv import implicit_gemm

gcd_inverse = implicit_gemm.gcd_inverse


@functools.cache
def mainloop_source() -> str:
    """Every function of the family's implicit_gemm.py (decorators included), less its module docstring and
    imports: a candidate imports torch, triton and triton.language itself."""
    path = Path(implicit_gemm.__file__)
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    blocks = []
    for node in ast.parse(text).body:
        if isinstance(node, ast.FunctionDef):
            start = min([node.lineno] + [d.lineno for d in node.decorator_list])
            blocks.append("\n".join(lines[start - 1:node.end_lineno]))
    return "# ---- the conv family's mainloop (corpus/kernels/conv/implicit_gemm.py) ----\n" + "\n\n\n".join(blocks)
