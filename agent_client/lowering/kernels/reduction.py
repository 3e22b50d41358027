"""Reduction kernels: groups of reductions over the same elements and dims, persistent or looped, and
split reductions (partial results of row chunks, then theirs) for long rows on few rows.

Usage: k = reduction_kernel("k1", full_shape, dims, reductions, outputs, buffers, "cuda")
"""

from __future__ import annotations

import math

from agent_client.lowering import ops
from agent_client.lowering.index import Index, delinearize, linearize
from agent_client.lowering.kernels.common import (
    Kernel,
    evaluate,
    finish,
    index_type,
    loadable,
    pow2,
    pow2_range,
    tune,
)
from agent_client.lowering.writer import Buffer, KernelWriter, LoweringError, shape


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
                     buffers: dict, target: str) -> Kernel:
    outer = [k for k in range(len(full_shape)) if k not in dims]
    xn = math.prod(full_shape[k] for k in outer)
    rn = math.prod(full_shape[k] for k in dims)
    rmax = 1 << 16 if target == "cpu" else 8192
    persistent = rn <= rmax
    w = KernelWriter(loadable(buffers, outputs), name)
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
    return _reduction_kernel_object(w, name, xn, rn, rblock, persistent, target, reductions, outputs)


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


# ---- split reductions ---------------------------------------------------------------------------------
SPLIT_MAX_ROWS = 256  # fewer rows than this (and long ones) leave most of a GPU idle: split each row
SPLIT_MIN_ELEMENTS = 1 << 16
_PROGRAMS = 1024  # partial-reduction programs to aim for (several per SM)


def should_split(full_shape: tuple, dims: list[int], kind: str, target: str) -> bool:
    rows = math.prod(full_shape[k] for k in range(len(full_shape)) if k not in dims)
    length = math.prod(full_shape[k] for k in dims)
    return (target != "cpu" and kind not in ("argmax", "argmin") and rows < SPLIT_MAX_ROWS
            and length >= SPLIT_MIN_ELEMENTS)


def split_reduction_kernels(name: str, full_shape: tuple, dims: list[int], red, buffers: dict,
                            target: str) -> list[Kernel]:
    """One long reduction as two kernels: partial results of row chunks, then the rows' results."""
    kind, x, _, _ = reduce_info(red)
    outer = [k for k in range(len(full_shape)) if k not in dims]
    xn = math.prod(full_shape[k] for k in outer)
    rn = math.prod(full_shape[k] for k in dims)
    splits = min(1024, pow2(max(1, _PROGRAMS // xn)), pow2(-(-rn // 4096)))
    chunk = -(-rn // splits)
    w = KernelWriter(loadable(buffers, [red]), f"{name}_part")
    w.tile_var = "ri"
    w.emit(f"xi = tl.program_id(0) // {splits}")
    w.emit(f"ci = tl.program_id(0) % {splits}")
    out_t = ops.ctype_of(red.meta["val"].dtype)
    acc_t = _acc_type(kind, red, ops.ctype_of(x.meta["val"].dtype))
    init = _init_lit(kind, acc_t)
    w.emit(f"acc = tl.full([RBLOCK], {init}, {ops.TL_TYPE[acc_t]})")
    w.emit(f"for roff in range(0, {chunk}, RBLOCK):")
    w.indent += 1
    w.push()
    w.emit(f"ri = ci * {chunk} + roff + tl.arange(0, RBLOCK)")
    w.emit(f"rmask = (ri < {rn}) & (roff + tl.arange(0, RBLOCK) < {chunk})")
    w.mask = "rmask"
    xpart = delinearize(Index.var("xi", xn), tuple(full_shape[k] for k in outer))
    rpart = delinearize(Index.var("ri", rn), tuple(full_shape[k] for k in dims))
    full, xs, rs = [], iter(xpart), iter(rpart)
    for k in range(len(full_shape)):
        full.append(next(rs) if k in dims else next(xs))
    v, c = evaluate(w, x, full, red)
    v = w.bind(f"tl.where(rmask, {w.cast(v, c, acc_t)}, {init})")
    w.emit(f"acc = {_combine(kind, 'acc', v)}")
    w.pop()
    w.indent -= 1
    part_dtype = {"f32": "float32", "f64": "float64", "i64": "int64", "i32": "int32"}[acc_t]
    fn = {"sum": "tl.sum", "max": "tl.max", "min": "tl.min", "any": "tl.max", "all": "tl.min"}.get(kind)
    total = f"{fn}(acc, 0)" if fn else "tl.reduce(acc, 0, _kkb_mul)"
    part = f"{name}_partial"
    w.args[part] = Buffer(part, None)
    w.emit(f"tl.store({part} + tl.program_id(0), {total})")
    rb, t1, s1 = tune(name, "RBLOCK", min(2048, pow2(chunk)), [256, 512, 1024, 2048, 4096])
    nw, t2, s2 = tune(name, "num_warps", 8, [2, 4, 8, 16])
    first = Kernel(w.name, finish(w, ["RBLOCK"]), list(w.args), f"({xn * splits},)",
                   {"RBLOCK": rb, "num_warps": nw}, {**t1, **t2}, {**s1, **s2}, "reduction",
                   f"split reduction ({kind}) of {rn} over {xn} rows, part 1: {splits} chunks of {chunk}",
                   temps=[(part, (xn, splits), part_dtype)])
    # part 2: the rows' results from their chunks
    dst = buffers[red]
    sblock = pow2(splits)
    lines = ["xi = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)[:, None]",
             f"si = tl.arange(0, {sblock})[None, :]",
             f"m = (xi < {xn}) & (si < {splits})",
             f"p = tl.load({part} + xi * {splits} + si, mask=m, other={init})",
             f"r = {(fn + '(p, 1)') if fn else 'tl.reduce(p, 1, _kkb_mul)'}[:, None]"]
    value = "(r != 0)" if kind in ("any", "all") else ("r" if acc_t == out_t else f"r.to({ops.TL_TYPE[out_t]})")
    lines.append(f"tl.store({dst.name} + xi, {value}.to({dst.name}.dtype.element_ty), mask=xi < {xn})")
    src = (f"@triton.jit\ndef {name}_final({part}, {dst.name}, XBLOCK: tl.constexpr):\n"
           + "\n".join("    " + ln for ln in lines) + "\n")
    xb = min(64, pow2(xn))
    second = Kernel(f"{name}_final", src, [part, dst.name], f"(triton.cdiv({xn}, {xb}),)",
                    {"XBLOCK": str(xb), "num_warps": "4"}, {}, {}, "reduction",
                    f"split reduction ({kind}), part 2: {splits} partial results per row -> {red.name}")
    return [first, second]
