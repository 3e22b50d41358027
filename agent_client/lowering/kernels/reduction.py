"""Reduction kernels: groups of reductions over the same elements and dims, as whole rows in one program
(persistent, or looped over the row) or, over outer dims, as columns; and the choice of strategy, which
sends long rows to the split forms of kernels/split.py.

Usage: k = reduction_kernel("k1", full_shape, dims, reductions, outputs, buffers, "cuda")
       reduction_strategy(full_shape, dims, kinds, passes, limits) -> "rows" | "column" | "split"
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

from agent_client.lowering import ops
from agent_client.lowering.index import Index, delinearize, linearize
from agent_client.lowering.kernels.common import (
    INT32_MAX,
    Kernel,
    evaluate,
    finish,
    index_type,
    loadable,
    pow2,
    pow2_range,
    tune,
)
from agent_client.lowering.writer import KernelWriter, LoweringError, shape


# ---- strategies ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class RowLimits:
    """Where a reduction leaves the one-program-a-row kernel. The lowering's options override any field by
    name (`{"split_min_row": 64}`), so that small tests reach the split forms."""

    persistent_max: int  # longest row one program holds whole in registers
    split_min_row: int  # rows at least this long ...
    split_max_rows: int  # ... and fewer than this many leave most of a GPU idle: split each row
    split_multi_pass: bool  # rows longer than persistent_max whose elements are read twice (a norm, a
    #                         softmax) are split too: one program's row no longer stays in L2 between passes
    column_min_inner: int = 16  # a reduction over outer dims with this many contiguous inner columns or more
    column_persistent_max: int = 256  # column reductions over this many rows or fewer keep them in registers


_LIMITS = {
    "cuda": RowLimits(persistent_max=8192, split_min_row=1 << 16, split_max_rows=256, split_multi_pass=True),
    # the interpreter pays per program and per op, not per byte: whole rows, no splits unless asked
    "cpu": RowLimits(persistent_max=1 << 16, split_min_row=1 << 62, split_max_rows=0, split_multi_pass=False),
}


def row_limits(target: str, options: dict | None = None) -> RowLimits:
    base = _LIMITS["cpu" if target == "cpu" else "cuda"]
    names = {f.name for f in fields(RowLimits)}
    over = {k: v for k, v in (options or {}).items() if k in names}
    return RowLimits(**{**base.__dict__, **over})


def column_split(full_shape: tuple, dims: list[int], limits: RowLimits) -> tuple[tuple, tuple] | None:
    """(kept dims before, kept dims after) the reduced ones when they are one block of dims followed by at
    least column_min_inner contiguous elements (a sum over dim 1 of (B, N, M)); else None."""
    dims = sorted(dims)
    if not dims or dims != list(range(dims[0], dims[-1] + 1)) or dims[-1] == len(full_shape) - 1:
        return None
    inner = tuple(full_shape[dims[-1] + 1:])
    if math.prod(inner) < limits.column_min_inner:
        return None
    return tuple(full_shape[:dims[0]]), inner


def reduction_strategy(full_shape: tuple, dims: list[int], kinds: list[str], passes: int,
                       limits: RowLimits) -> str:
    """"rows", "column" or "split" for a group of reductions; `passes` counts the reads of the row's elements
    in one program (2 when outputs the size of the input, or a reduction of a reduction, need them again)."""
    rows = math.prod(full_shape[k] for k in range(len(full_shape)) if k not in dims)
    length = math.prod(full_shape[k] for k in dims)
    if any(k in ("argmax", "argmin") for k in kinds):
        return "column" if column_split(full_shape, dims, limits) else "rows"
    if length >= limits.split_min_row and rows < limits.split_max_rows:
        return "split"
    if column_split(full_shape, dims, limits):
        return "column"
    if limits.split_multi_pass and passes > 1 and length > limits.persistent_max:
        return "split"
    return "rows"


# ---- reductions ----------------------------------------------------------------------------------------
def reduce_info(node) -> tuple[str, object, list[int], bool]:
    """(kind, input, dims, keepdim) of a reduction node."""
    from agent_client.lowering.normalize import reduce_dims

    p, a = ops.packet(node), list(node.args)
    x = a[0]
    name = {ops.aten.sum: "sum", ops.prims.sum: "sum", ops.aten.amax: "max", ops.prims.amax: "max",
            ops.aten.amin: "min", ops.prims.amin: "min", ops.aten.argmax: "argmax", ops.aten.argmin: "argmin",
            ops.aten.any: "any", ops.aten.all: "all", ops.aten.prod: "prod", ops.prims.prod: "prod"}[p]
    if p in (ops.prims.sum, ops.prims.amax, ops.prims.amin, ops.prims.prod):
        return name, x, reduce_dims(x, a[1]), False
    dims = a[1] if len(a) > 1 else node.kwargs.get("dim")
    keep = a[2] if len(a) > 2 else node.kwargs.get("keepdim", False)
    if name in ("argmax", "argmin") and dims is None:
        return name, x, list(range(len(shape(x)))), bool(keep)
    return name, x, reduce_dims(x, dims), bool(keep)


_INIT = {"sum": "0", "prod": "1", "max": '-float("inf")', "min": 'float("inf")', "any": "0", "all": "1"}


def _acc_type(kind: str, node, x_ctype: str) -> str:
    if kind in ("any", "all"):
        return "i32"
    if kind in ("argmax", "argmin", "max", "min"):
        return x_ctype if x_ctype != "i1" else "i32"
    return ops.ctype_of(node.meta["val"].dtype)


def _init_lit(kind: str, ctype: str) -> str:
    if ctype in ("i32", "i64") and kind in ("max", "min", "argmax", "argmin"):
        return "-2147483647" if kind in ("max", "argmax") else "2147483647"
    if kind in ("argmax",):
        return '-float("inf")'
    if kind in ("argmin",):
        return 'float("inf")'
    lit = _INIT[kind]
    return lit if ctype not in ("f32", "f64") or "float" in lit else lit + ".0"


def _combine(kind: str, acc: str, v: str) -> str:
    return {"sum": f"{acc} + {v}", "prod": f"{acc} * {v}", "max": f"tl.maximum({acc}, {v})",
            "min": f"tl.minimum({acc}, {v})", "any": f"tl.maximum({acc}, {v})",
            "all": f"tl.minimum({acc}, {v})"}[kind]


def _finalize(kind: str, acc: str) -> str:
    fn = {"sum": "tl.sum", "max": "tl.max", "min": "tl.min", "any": "tl.max", "all": "tl.min"}.get(kind)
    if fn:
        return f"{fn}({acc}, 1)[:, None]"
    return f"tl.reduce({acc}, 1, _kkb_mul)[:, None]"


def reduction_kernel(name: str, full_shape: tuple, dims: list[int], reductions: list, outputs: list,
                     buffers: dict, target: str, limits: RowLimits | None = None) -> Kernel:
    """Whole rows in one program (persistent, or looped over the row), or, for a reduction over outer dims
    (`column_split`), a program per (outer index, block of inner columns): its loads run along the
    contiguous inner dims, one row of the reduced dims after another."""
    limits = limits or row_limits(target)
    outer = [k for k in range(len(full_shape)) if k not in dims]
    xn = math.prod(full_shape[k] for k in outer)
    rn = math.prod(full_shape[k] for k in dims)
    column = column_split(full_shape, dims, limits)
    persistent = rn <= (limits.column_persistent_max if column else limits.persistent_max)
    w = KernelWriter(loadable(buffers, outputs), name)
    if column:
        before, inner = column
        on, inn = math.prod(before), math.prod(inner)
        w.emit(f"xo = tl.program_id(0) // tl.cdiv({inn}, XBLOCK)")
        w.emit(f"xi = (tl.program_id(0) % tl.cdiv({inn}, XBLOCK)) * XBLOCK + tl.arange(0, XBLOCK)[:, None]")
        if xn * rn > INT32_MAX:
            w.emit("xo = xo.to(tl.int64)")
        index_type(w, xn * rn, "xi")
        w.emit(f"xmask = xi < {inn}")
        xpart = delinearize(Index.var("xo", on), before) + delinearize(Index.var("xi", inn), inner)
    else:
        w.emit("xi = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)[:, None]")
        index_type(w, xn * rn, "xi")
        w.emit(f"xmask = xi < {xn}")
        xpart = delinearize(Index.var("xi", xn), tuple(full_shape[k] for k in outer))
    rblock = pow2(rn)

    def full_idx():
        rpart = delinearize(Index.var("ri", rn), tuple(full_shape[k] for k in dims))
        out, xi_, ri_ = [], iter(xpart), iter(rpart)
        for k in range(len(full_shape)):
            out.append(next(ri_) if k in dims else next(xi_))
        return out

    def reduced_idx(keep: bool):
        out, xi_ = [], iter(xpart)
        for k in range(len(full_shape)):
            if k in dims:
                if keep:
                    out.append(Index.of(0))
            else:
                out.append(next(xi_))
        return out

    def r_setup(offset: str):
        w.emit(f"ri = {offset}tl.arange(0, RBLOCK)[None, :]")
        w.emit(f"rmask = ri < {rn}")
        w.mask = "xmask & rmask"

    if persistent:
        r_setup("")
    for red in reductions:
        kind, x, _, keep = reduce_info(red)
        v0, xc = None, None
        if persistent:
            v0, xc = evaluate(w, x, full_idx(), red)
            acc_t = _acc_type(kind, red, xc)
            v = w.bind(w.cast(v0, xc, acc_t))
            init = _init_lit(kind, acc_t)
            masked = w.bind(f"tl.where(xmask & rmask, {v}, {init})")
            if kind in ("argmax", "argmin"):
                best = w.bind(f"tl.{'max' if kind == 'argmax' else 'min'}({masked}, 1)[:, None]")
                res = w.bind(f"tl.min(tl.where({masked} == {best}, ri, {rn}), 1)[:, None]")
                res_t = "i32"
            else:
                res = w.bind(_finalize(kind, masked))
                res_t = acc_t
        else:
            w.mask = "xmask"
            probe_t = ops.ctype_of(x.meta["val"].dtype)
            acc_t = _acc_type(kind, red, probe_t)
            tl_t = ops.TL_TYPE[acc_t]
            w.n += 1
            acc, acci = f"acc{w.n}", f"acci{w.n}"
            init = _init_lit(kind, acc_t)
            w.emit(f"{acc} = tl.full([XBLOCK, RBLOCK], {init}, {tl_t})")
            if kind in ("argmax", "argmin"):
                w.emit(f"{acci} = tl.full([XBLOCK, RBLOCK], {rn}, tl.int32)")
            w.emit(f"for roff in range(0, {rn}, RBLOCK):")
            w.indent += 1
            w.push()
            r_setup("roff + ")
            v0, xc = evaluate(w, x, full_idx(), red)
            v = w.bind(w.cast(v0, xc, acc_t))
            masked = w.bind(f"tl.where(xmask & rmask, {v}, {init})")
            if kind in ("argmax", "argmin"):
                cmp = ">" if kind == "argmax" else "<"
                take = w.bind(f"{masked} {cmp} {acc}")
                w.emit(f"{acci} = tl.where({take}, ri, {acci})")
                w.emit(f"{acc} = tl.where({take}, {masked}, {acc})")
            else:
                w.emit(f"{acc} = {_combine(kind, acc, masked)}")
            w.pop()
            w.indent -= 1
            w.mask = "xmask"
            if kind in ("argmax", "argmin"):
                best = w.bind(f"tl.{'max' if kind == 'argmax' else 'min'}({acc}, 1)[:, None]")
                res = w.bind(f"tl.min(tl.where({acc} == {best}, {acci}, {rn}), 1)[:, None]")
                res_t = "i32"
            else:
                res = w.bind(_finalize(kind, acc))
                res_t = acc_t
        out_t = ops.ctype_of(red.meta["val"].dtype)
        if kind in ("any", "all"):
            res, res_t = w.bind(f"({res} != 0)"), "i1"
        res = w.bind(w.round_to(w.cast(res, res_t, out_t), str(red.meta["val"].dtype).removeprefix("torch.")))
        w.homes[red] = (reduced_idx(keep), res, out_t)
    full_outs = [o for o in outputs if math.prod(shape(o)) == xn * rn and xn * rn != xn]
    row_outs = [o for o in outputs if o not in full_outs]
    w.mask = "xmask"
    for node in row_outs:
        if math.prod(shape(node)) != xn:
            raise LoweringError(f"{node.name}: shape {shape(node)} fits neither the rows nor the elements "
                                f"of reduction kernel {name}")
        idx = delinearize(linearize(reduced_idx(False), tuple(full_shape[k] for k in outer)), shape(node))
        code, _ = evaluate(w, node, idx)
        w.store(buffers[node], idx, code, "xmask")
    if full_outs:
        if not persistent:
            w.emit(f"for roff in range(0, {rn}, RBLOCK):")
            w.indent += 1
            w.push()
            r_setup("roff + ")
        w.mask = "xmask & rmask"
        for node in full_outs:
            idx = delinearize(linearize(full_idx(), tuple(full_shape)), shape(node))
            code, _ = evaluate(w, node, idx)
            w.store(buffers[node], idx, code, "xmask & rmask")
        if not persistent:
            w.pop()
            w.indent -= 1
    if column:
        return _column_kernel_object(w, name, column, rn, persistent, reductions, outputs)
    return _reduction_kernel_object(w, name, xn, rn, rblock, persistent, target, reductions, outputs)


def _column_kernel_object(w, name, column, rn, persistent, reductions, outputs) -> Kernel:
    """Launch parameters of a column reduction: XBLOCK inner columns a program (a wide, coalesced row of
    loads), RBLOCK rows of the reduced dims at a time (all of them when persistent)."""
    before, inner = column
    on, inn = math.prod(before), math.prod(inner)
    xcap = max(16, pow2(inn))
    if persistent:
        rblock = pow2(rn)
        xdefault = min(xcap, max(16, 4096 // rblock))
        xb, t1, s1 = tune(name, "XBLOCK", xdefault, [b for b in pow2_range(16, 512) if b <= xcap])
        constexprs, tun, space = {"XBLOCK": xb, "RBLOCK": str(rblock)}, dict(t1), dict(s1)
    else:
        xdefault = min(xcap, 64)
        while xdefault > 16 and on * -(-inn // xdefault) < 256:  # few columns (a norm over the batch): more
            xdefault //= 2  # programs, narrower ones
        xb, t1, s1 = tune(name, "XBLOCK", xdefault, [b for b in pow2_range(16, 512) if b <= xcap])
        rb, t3, s3 = tune(name, "RBLOCK", min(16, pow2(rn)), [b for b in pow2_range(1, 128) if b <= pow2(rn)])
        constexprs, tun, space = {"XBLOCK": xb, "RBLOCK": rb}, {**t1, **t3}, {**s1, **s3}
    nw, t2, s2 = tune(name, "num_warps", 4 if persistent else 8, [2, 4, 8, 16])
    constexprs["num_warps"] = nw
    note = (f"column reduction of {rn} ({'persistent' if persistent else 'looped'}) over {on} x {inn} "
            f"columns: {', '.join(r.name for r in reductions)} -> {', '.join(n.name for n in outputs)}")
    return Kernel(name, finish(w, ["XBLOCK", "RBLOCK"]), list(w.args), f"({on} * triton.cdiv({inn}, {xb}),)",
                  constexprs, {**tun, **t2}, {**space, **s2}, "reduction", note)


def _reduction_kernel_object(w, name, xn, rn, rblock, persistent, target, reductions, outputs) -> Kernel:
    xcap = pow2(xn)
    if persistent:
        per_prog = max(1, (1 << 18 if target == "cpu" else 4096) // rblock)
        xdefault = min(xcap, pow2(per_prog) if per_prog & (per_prog - 1) else per_prog)
        xb, t1, s1 = tune(name, "XBLOCK", xdefault,
                           [b for b in pow2_range(1, 64) if b <= xcap and b * rblock <= (1 << 20)]
                           if target != "cpu" else [xdefault])
        constexprs = {"XBLOCK": xb, "RBLOCK": str(rblock)}
        tun, space = dict(t1), dict(s1)
    else:
        xb, t1, s1 = tune(name, "XBLOCK", 1, [b for b in (1, 2, 4, 8) if b <= xcap])
        rdefault = 8192 if target == "cpu" else 1024
        rb, t3, s3 = tune(name, "RBLOCK", rdefault, [256, 512, 1024, 2048, 4096, 8192])
        constexprs = {"XBLOCK": xb, "RBLOCK": rb}
        tun, space = {**t1, **t3}, {**s1, **s3}
    nw, t2, s2 = tune(name, "num_warps", 4 if rblock <= 2048 or not persistent else 8, [1, 2, 4, 8, 16])
    constexprs["num_warps"] = nw
    tun.update(t2)
    space.update(s2)
    note = (f"{'persistent' if persistent else 'looped'} reduction of {rn} over {xn} rows: "
            f"{', '.join(r.name for r in reductions)} -> {', '.join(n.name for n in outputs)}")
    return Kernel(name, finish(w, ["XBLOCK", "RBLOCK"]), list(w.args), f"(triton.cdiv({xn}, {xb}),)",
                  constexprs, tun, space, "reduction", note)
