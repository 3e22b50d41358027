"""The relevant part of a library kernel file for a prompt: its tunables and kernel functions first.

Usage: ex = kernel_excerpt(record.source, max_tokens=1500, count=counter.count, path=record.path)
       ex.text, ex.tokens, ex.names, ex.whole

Library kernel files run to 6,000-26,000 tokens, so a prompt carries a part of one. The file is read
with `ast` (never run) into pieces: the imports, `TUNABLES`, each `@*.jit` function (a kernel), the
other functions and classes. Pieces are taken in this order while they fit: imports and TUNABLES; the
first kernel that no other kernel calls (a library's default path comes first in its file) with the
kernels it calls; `ModelNew` and the functions it calls (the launcher); the next kernels; the rest of
the file. They are printed in file order, a `# ...` line where lines were left out. When not even the
first kernel fits, it is cut at a line and says so. When the whole file fits, it is the whole file.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass

from kb_server.spec_ops import parse_python

TUNABLES_NAME = "TUNABLES"
GAP = "# ..."


@dataclass(frozen=True)
class Piece:
    name: str
    role: str  # "imports" | "tunables" | "kernel" | "function" | "class" | "other"
    first: int  # 0-based line of its first line (decorators included)
    last: int  # 0-based line of its last line
    calls: frozenset[str]  # names it refers to (to follow kernels and launchers)


@dataclass(frozen=True)
class Excerpt:
    text: str
    tokens: int
    names: list[str]  # pieces included, in file order
    whole: bool  # the whole file
    kernels_shown: int  # kernel functions included
    kernels_in_file: int


def _is_kernel(node: ast.AST) -> bool:
    if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        return False
    for dec in node.decorator_list:
        target = dec.func if isinstance(dec, ast.Call) else dec
        name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
        if name == "jit":
            return True
    return False


def _names(node: ast.AST) -> frozenset[str]:
    return frozenset(n.id for n in ast.walk(node) if isinstance(n, ast.Name)) | frozenset(
        n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute))


def pieces(source: str) -> list[Piece] | None:
    """The file's top-level pieces in order; None when it does not parse (then a plain cut is used)."""
    try:
        tree = parse_python(source)
    except (SyntaxError, ValueError, RecursionError):
        return None
    out: list[Piece] = []
    for node in tree.body:
        first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))]) - 1
        last = (node.end_lineno or node.lineno) - 1
        if isinstance(node, ast.Import | ast.ImportFrom):
            role, name = "imports", "imports"
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            name = ",".join(t.id for t in targets if isinstance(t, ast.Name)) or "assignment"
            role = "tunables" if name == TUNABLES_NAME else "other"
        elif _is_kernel(node):
            role, name = "kernel", node.name
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            role, name = "function", node.name
        elif isinstance(node, ast.ClassDef):
            role, name = "class", node.name
        else:
            role, name = "other", type(node).__name__.lower()
        out.append(Piece(name, role, first, last, _names(node)))
    return out


def _closure(start: list[Piece], by_name: dict[str, Piece], roles: set[str]) -> list[Piece]:
    """`start` and every piece of `roles` it refers to, transitively, in discovery order."""
    seen: dict[str, Piece] = {}
    stack = list(start)
    while stack:
        piece = stack.pop(0)
        if piece.name in seen:
            continue
        seen[piece.name] = piece
        stack.extend(by_name[n] for n in sorted(piece.calls) if n in by_name and by_name[n].role in roles
                     and n not in seen)
    return list(seen.values())


def _priority(parts: list[Piece]) -> list[list[Piece]]:
    """Groups of pieces in the order a reader of the prompt needs them (see the module docstring)."""
    by_name = {p.name: p for p in parts if p.role in ("kernel", "function", "class")}
    kernels = [p for p in parts if p.role == "kernel"]
    called = {n for k in kernels for n in k.calls if n != k.name}
    entries = [k for k in kernels if k.name not in called] or kernels[:1]
    groups: list[list[Piece]] = [[p for p in parts if p.role in ("imports", "tunables")]]
    if entries:
        groups.append(_closure([entries[0]], by_name, {"kernel"}))
    model = by_name.get("ModelNew")
    if model is not None:
        groups.append(_closure([model], by_name, {"function", "class"}))
    groups += [_closure([k], by_name, {"kernel"}) for k in entries[1:]]
    groups.append(list(parts))
    return groups


def _spans(lines: list[str], chosen: list[Piece]) -> list[int | None]:
    """Line numbers to print, in order, None where a `# ...` gap line goes."""
    spans = sorted({(p.first, p.last) for p in chosen})
    out: list[int | None] = []
    previous_end = -1
    for first, last in spans:
        if first <= previous_end:
            continue
        if (out and first > previous_end + 1) or (not out and any(ln.strip() for ln in lines[:first])):
            out.append(None)
        out.extend(range(first, last + 1))
        previous_end = last
    if any(ln.strip() for ln in lines[previous_end + 1:]):
        out.append(None)
    return out


class _Lines:
    """The file's lines with their token counts, so a selection is counted without re-tokenizing it
    (counts add up over lines: a line break is one token and never joins two pieces)."""

    def __init__(self, lines: list[str], count: Callable[[str], int]):
        self.lines = lines
        self.tokens = [count(ln) for ln in lines]
        self.gap_tokens = count(GAP)

    def count(self, spans: list[int | None]) -> int:
        return sum(self.gap_tokens if i is None else self.tokens[i] for i in spans) + max(0, len(spans) - 1)

    def text(self, spans: list[int | None]) -> str:
        return "\n".join(GAP if i is None else self.lines[i] for i in spans)


def kernel_excerpt(source: str, max_tokens: int, count: Callable[[str], int],
                   truncate: Callable[[str, int], str]) -> Excerpt:
    """The most useful part of `source` within `max_tokens` (as counted by `count`)."""
    text = source.strip("\n")
    parts = pieces(text)
    kernels_in_file = sum(p.role == "kernel" for p in parts or [])
    total = count(text)
    if total <= max_tokens:
        return Excerpt(text, total, list(dict.fromkeys(p.name for p in parts or [])), True, kernels_in_file,
                       kernels_in_file)
    if not parts:
        cut = truncate(text, max(0, max_tokens - count("\n" + GAP))) + "\n" + GAP
        return Excerpt(cut, count(cut), [], False, 0, kernels_in_file)
    book = _Lines(text.split("\n"), count)
    chosen: list[Piece] = []
    groups = _priority(parts)
    for group in groups:
        rest = [p for p in group if p not in chosen]
        if rest and book.count(_spans(book.lines, [*chosen, *rest])) <= max_tokens:  # the whole group
            chosen += rest
            continue
        for piece in rest:  # as much of the group as fits, in its order; never a later fragment
            if book.count(_spans(book.lines, [*chosen, piece])) > max_tokens:
                break
            chosen.append(piece)
    rendered = book.text(_spans(book.lines, chosen))
    if kernels_in_file and not any(p.role == "kernel" for p in chosen):
        kernel = groups[1][0]
        rendered = _cut_first_kernel(book, kernel, chosen, max_tokens)
        if count(rendered) > max_tokens:  # the imports and tunables leave no room: the kernel alone
            chosen = []
            rendered = _cut_first_kernel(book, kernel, chosen, max_tokens)
        chosen = [*chosen, kernel]
    if count(rendered) > max_tokens:  # a budget below any useful excerpt: a plain cut
        rendered = truncate(rendered, max_tokens)
    names = list(dict.fromkeys(p.name for p in sorted(chosen, key=lambda p: p.first)))
    shown = sum(p.role == "kernel" for p in chosen)
    return Excerpt(rendered, count(rendered), names, False, shown, kernels_in_file)


def _cut_first_kernel(book: _Lines, kernel: Piece, chosen: list[Piece], max_tokens: int) -> str:
    """The chosen pieces before the kernel and the kernel's first lines that fit, marked as cut."""
    head = _spans(book.lines, [p for p in chosen if p.last < kernel.first]) if chosen else []
    if head and head[-1] is None:
        head = head[:-1]
    marker = f"    # ... (the rest of {kernel.name}: {kernel.last - kernel.first + 1} lines in all)"
    marker_tokens = book.count([]) + len(marker.split()) * 2 + 8  # generous: the marker is a few words
    spans = [*head, *([None] if head else [])]
    for i in range(kernel.first, kernel.last + 1):
        if book.count([*spans, i]) + marker_tokens + book.gap_tokens + 2 > max_tokens:
            break
        spans.append(i)
    return "\n".join([book.text(spans), marker, GAP])
