"""Parsing Python source safely from many threads.

CPython 3.11 keeps the AST converter's recursion counter per interpreter, not per thread, so two threads
parsing at once can fail with `SystemError: AST constructor recursion depth mismatch` on valid source (a
session judges candidates from several threads). Every parse in the harness and the agent goes through
`parse_python`, which serialises them and retries that one error once.
"""

from __future__ import annotations

import ast
import threading

_LOCK = threading.Lock()
_RACE = "AST constructor recursion depth mismatch"
_ast_parse = ast.parse  # the one call this module guards (tests stand in for it)


def parse_python(source: str, filename: str = "<unknown>") -> ast.Module:
    """`ast.parse(source)`; SyntaxError, ValueError and RecursionError pass through to the caller."""
    for attempt in (1, 2):
        try:
            with _LOCK:
                return _ast_parse(source, filename=filename)
        except SystemError as exc:
            if _RACE not in str(exc) or attempt == 2:
                raise
    raise AssertionError("unreachable")
