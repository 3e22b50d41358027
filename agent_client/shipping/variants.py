"""A spec at shapes a user names: its size constants (or get_inputs/get_init_inputs defaults) rewritten.

Usage: overrides = parse_shapes("batch_size=64,height=16")       # {"batch_size": 64, "height": 16}
       source = spec_at(spec_source, overrides)                   # the same spec, at those sizes

KernelBench specs keep their sizes in module-level constants (`batch_size = 128`, `height, width = 32, 32`)
read by get_inputs and get_init_inputs; our own specs also take keyword arguments with defaults. A name is
rewritten where it is defined, so constants computed from it (`bias_shape = (out_channels, 1, 1)`) follow.
VARIANTS and get_variants are removed: the new spec's default variant is the named shapes, the one judged
and timed. An unknown name is an error that lists the names the spec has.
"""

from __future__ import annotations

import ast

from harness.pysource import parse_python

_DROP = ("VARIANTS", "get_variants")


class ShapesError(ValueError):
    """Shapes that cannot be applied to the spec; the message names them and what the spec has."""


def parse_shapes(text: str) -> dict:
    """"a=1,b=(8, 1, 1)" -> {"a": 1, "b": (8, 1, 1)}: commas inside brackets stay with their value."""
    parts, depth, current = [], 0, ""
    for ch in text:
        depth += ch in "([{"
        depth -= ch in ")]}"
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += ch
    parts.append(current)
    out = {}
    for part in (p.strip() for p in parts):
        if not part:
            continue
        name, sep, raw = part.partition("=")
        if not sep or not name.strip().isidentifier():
            raise ShapesError(f"--shapes {text!r}: {part!r} is not NAME=VALUE")
        try:
            out[name.strip()] = ast.literal_eval(raw.strip())
        except (ValueError, SyntaxError) as exc:
            raise ShapesError(f"--shapes {text!r}: the value of {name.strip()} ({raw.strip()!r}) is not a "
                              "Python literal") from exc
    return out


def shapes_text(overrides: dict) -> str:
    return ",".join(f"{k}={v!r}" for k, v in overrides.items()) or "as exported"


def _spans(tree: ast.Module, overrides: dict, drop_variants: bool
           ) -> tuple[list[tuple[ast.AST, str]], set[str], list[ast.stmt]]:
    """(node, new text) edits, the names found, and the statements to drop."""
    edits, found, drop = [], set(), []
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            target, value = stmt.targets[0], stmt.value
            if isinstance(target, ast.Name):
                if target.id in _DROP and drop_variants:
                    drop.append(stmt)
                elif target.id in overrides:
                    edits.append((value, repr(overrides[target.id])))
                    found.add(target.id)
            elif (isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple)
                  and len(target.elts) == len(value.elts)):
                for name, elt in zip(target.elts, value.elts):
                    if isinstance(name, ast.Name) and name.id in overrides:
                        edits.append((elt, repr(overrides[name.id])))
                        found.add(name.id)
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None:
            if stmt.target.id in overrides:
                edits.append((stmt.value, repr(overrides[stmt.target.id])))
                found.add(stmt.target.id)
        elif isinstance(stmt, ast.FunctionDef):
            if stmt.name in _DROP and drop_variants:
                drop.append(stmt)
            elif stmt.name in ("get_inputs", "get_init_inputs"):
                args = stmt.args
                positional = args.posonlyargs + args.args
                pairs = list(zip(positional[len(positional) - len(args.defaults):], args.defaults))
                pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None]
                for arg, default in pairs:
                    if arg.arg in overrides:
                        edits.append((default, repr(overrides[arg.arg])))
                        found.add(arg.arg)
    return edits, found, drop


def known_names(spec_source: str) -> list[str]:
    """The names --shapes may set: module-level constants and get_inputs/get_init_inputs defaults."""
    tree = parse_python(spec_source)
    names = []
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign):
            for t in stmt.targets:
                elts = t.elts if isinstance(t, ast.Tuple) else [t]
                names += [e.id for e in elts if isinstance(e, ast.Name) and e.id not in _DROP]
        elif isinstance(stmt, ast.FunctionDef) and stmt.name in ("get_inputs", "get_init_inputs"):
            a = stmt.args
            names += [x.arg for x in (a.posonlyargs + a.args)[len(a.posonlyargs + a.args) - len(a.defaults):]]
            names += [x.arg for x, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None]
    return names


def spec_at(spec_source: str, overrides: dict, drop_variants: bool = True) -> str:
    """The spec's source with `overrides` applied and (unless told) its VARIANTS removed (ShapesError on
    unknown names)."""
    tree = parse_python(spec_source)
    edits, found, drop = _spans(tree, overrides, drop_variants)
    missing = sorted(set(overrides) - found)
    if missing:
        raise ShapesError(f"--shapes names {missing}, which the spec does not define; it has "
                          f"{known_names(spec_source)}")
    lines = [line.encode() for line in spec_source.splitlines(keepends=True)]
    spans = [(n.lineno, n.col_offset, n.end_lineno, n.end_col_offset, text) for n, text in edits]
    spans += [(s.lineno, 0, s.end_lineno, len(lines[s.end_lineno - 1]), "") for s in drop]
    for line0, col0, line1, col1, text in sorted(spans, reverse=True):  # offsets are in UTF-8 bytes
        head, tail = lines[line0 - 1][:col0], lines[line1 - 1][col1:]
        lines[line0 - 1:line1] = [head + text.encode() + tail]
    return b"".join(lines).decode()
