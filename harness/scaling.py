"""Reduced sizes for a spec: its module-level size constants scaled down so the problem runs on a CPU.

Usage: scaled = scale_spec_source(source, max_input_elements=1 << 18)
       scaled.source (the new spec text), scaled.factor, scaled.changes ({name: (old, new)})

KernelBench problems set their sizes as module-level integers (`batch_size = 4096`, `dim = 393216`,
`height = width = 256`) or tuples of them. Every such integer of at least `MIN_SCALED` is multiplied by
one power-of-two factor, the largest for which the default inputs hold at most `max_input_elements`
elements; smaller integers (kernel sizes, strides, groups, dims to reduce over) are left alone. A scaled
value never drops below `FLOOR`. The scaled spec is checked by building the model and running its
forward on the meta device: a factor that breaks a shape rule (a channel count no longer divisible by
the groups) is skipped for the next milder one. Nothing is rewritten but those constants.
"""

from __future__ import annotations

import ast
import math
from dataclasses import dataclass, field

from harness.pysource import parse_python

MIN_SCALED = 32  # integers below this are kernel sizes, strides, groups or dims: not scaled at first
FLOOR = 8  # a scaled size never goes below this
# when scaling those alone cannot meet the budget, smaller sizes are scaled too: (least scaled, floor)
RELAXED = ((16, 4), (8, 2))


class ScalingError(ValueError):
    """No factor gives a spec that builds and runs within the element budget; the message says why."""


@dataclass(frozen=True)
class ScaledSpec:
    source: str
    factor: float  # 1.0 = unchanged
    changes: dict[str, tuple] = field(default_factory=dict)  # constant name -> (old, new)
    input_elements: int = 0  # elements of the default inputs at this factor
    flops: int = 0  # floating-point operations of one forward at this factor (FlopCounterMode)


def _size_constants(tree: ast.Module) -> list[tuple[ast.Assign | ast.AnnAssign, list[str]]]:
    """Module-level assignments of an int or a tuple/list of ints, with the names they bind."""
    out = []
    for node in tree.body:
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            continue
        names = []
        for t in targets:  # `a = b = 8`, and `height, width = 128, 128`
            elts = t.elts if isinstance(t, (ast.Tuple, ast.List)) else [t]
            names += [e.id for e in elts if isinstance(e, ast.Name)]
            if len(names) == 0 or not all(isinstance(e, ast.Name) for e in elts):
                names = []
                break
        if not names:
            continue
        if _ints(value) is not None:
            out.append((node, names))
    return out


_INT_OPS = {ast.Add: int.__add__, ast.Sub: int.__sub__, ast.Mult: int.__mul__, ast.FloorDiv: int.__floordiv__,
            ast.Pow: int.__pow__, ast.LShift: int.__lshift__}


def _int(value: ast.expr) -> int | None:
    """An int literal or constant arithmetic of them (`2048 * 2`, `1 << 20`), else None."""
    if isinstance(value, ast.Constant) and type(value.value) is int:
        return value.value
    if isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.USub):
        inner = _int(value.operand)
        return None if inner is None else -inner
    if isinstance(value, ast.BinOp) and type(value.op) in _INT_OPS:
        left, right = _int(value.left), _int(value.right)
        if left is not None and right is not None and not (isinstance(value.op, ast.Pow) and right > 64):
            return _INT_OPS[type(value.op)](left, right)
    return None


def _ints(value: ast.expr):
    """The int (or tuple of ints) a literal holds, else None."""
    if isinstance(value, (ast.Tuple, ast.List)) and value.elts:
        items = [_int(e) for e in value.elts]
        return None if any(i is None for i in items) else tuple(items)
    return _int(value)


def _scale_int(v: int, factor: float, least: int = MIN_SCALED, floor: int = FLOOR) -> int:
    if v < least or factor >= 1:
        return v
    return max(floor, math.floor(v * factor))


def _scale_value(v, factor: float, least: int = MIN_SCALED, floor: int = FLOOR):
    if isinstance(v, tuple):
        return tuple(_scale_int(x, factor, least, floor) for x in v)
    return _scale_int(v, factor, least, floor)


def _rewrite(source: str, factor: float, least: int = MIN_SCALED, floor: int = FLOOR) -> tuple[str, dict]:
    tree = parse_python(source)
    lines = source.splitlines(keepends=True)
    edits, changes = [], {}
    for node, names in _size_constants(tree):
        old = _ints(node.value)
        new = _scale_value(old, factor, least, floor)
        if new == old:
            continue
        value = node.value
        edits.append((value.lineno, value.col_offset, value.end_lineno, value.end_col_offset, repr(new)))
        if len(names) > 1 and isinstance(old, tuple) and len(old) == len(names):  # `h, w = 128, 128`
            changes.update({n: (o, v) for n, o, v in zip(names, old, new) if o != v})
        else:
            changes.update({n: (old, new) for n in names})
    for l0, c0, l1, c1, text in sorted(edits, reverse=True):
        if l0 != l1:  # a literal over several lines: join them into the first
            lines[l0 - 1] = lines[l0 - 1][:c0] + text + lines[l1 - 1][c1:]
            del lines[l0:l1]
        else:
            lines[l0 - 1] = lines[l0 - 1][:c0] + text + lines[l0 - 1][c1:]
    return "".join(lines), changes


def scaled_source(source: str, factor: float) -> tuple[str, dict]:
    """The source with its size constants (those of at least MIN_SCALED) times `factor`, and the changes."""
    return _rewrite(source, factor)


def _measure(source: str, name: str) -> tuple[int, int]:
    """Build the spec's model and inputs on the meta device, run forward: (input elements, FLOPs)."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    from harness.redirect import model_on_meta, tensors_on

    namespace: dict = {"__name__": f"_kkb_scaled_{abs(hash(name))}"}
    exec(compile(source, name, "exec"), namespace)  # noqa: S102 - the spec is trusted reference code
    model = model_on_meta(lambda: namespace["Model"](*namespace["get_init_inputs"]()))
    with tensors_on("meta"):
        inputs = list(namespace["get_inputs"]())
        counter = FlopCounterMode(display=False)
        with torch.no_grad(), counter:
            model(*inputs)
    return sum(t.numel() for t in inputs if isinstance(t, torch.Tensor)), int(counter.get_total_flops())


def scale_spec_source(source: str, max_input_elements: int = 1 << 18, name: str = "<spec>",
                      max_flops: int | None = None) -> ScaledSpec:
    """The spec with its size constants scaled so its default inputs hold <= max_input_elements (and one
    forward costs <= max_flops, when given: convolutions and matmuls cost more than their inputs say)."""
    last_error, smallest = None, None
    for least, floor in ((MIN_SCALED, FLOOR),) + RELAXED:
        factor, previous = 1.0, None
        while factor >= 2.0 ** -16:
            text, changes = _rewrite(source, factor, least, floor)
            if factor < 1 and changes == previous:
                break  # every scalable constant is at its floor
            previous = changes
            try:
                elements, flops = _measure(text, name)
            except Exception as exc:  # noqa: BLE001 - a shape rule broken at this factor: try the next one
                last_error = exc
                factor /= 2
                continue
            scaled = ScaledSpec(text, factor, changes, elements, flops)
            if elements <= max_input_elements and (max_flops is None or flops <= max_flops):
                return scaled
            if smallest is None or (elements, flops) < (smallest.input_elements, smallest.flops):
                smallest = scaled
            factor /= 2
    if smallest is not None:  # sizes written inside get_inputs() stay: the smallest that runs
        return smallest
    detail = f" (last error: {type(last_error).__name__}: {last_error})" if last_error else ""
    raise ScalingError(f"{name}: the spec does not build and run on the meta device at any scaling of its "
                       f"size constants{detail}")
