"""Triton source for each kind of kernel a plan holds: pointwise, reduction group, scan, matmul, convolution.

Usage: k = pointwise_kernel("k0", outputs, buffers, target); k.source, k.grid, k.tunables

Each generator sets up the kernel's index variables and mask, asks the KernelWriter for the values it
stores, and returns a Kernel: the @triton.jit source, the buffers it takes in order, the launch grid and
the tunable launch parameters (block sizes, warps, stages) with their defaults and allowed values. Sizes
are literals: a plan is generated per input shape (the forward dispatches on shapes).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from agent_client.lowering import ops
from agent_client.lowering.index import Index, address, delinearize, linearize
from agent_client.lowering.writer import Buffer, FusionError, KernelWriter, LoweringError, shape

INT32_MAX = 2**31 - 1


@dataclass
class Kernel:
    name: str
    source: str
    args: list[str]  # Python variables of the buffers it takes, in order
    grid: str  # Python expression of the launch grid (may read T, the tunables)
    constexprs: dict[str, str]  # keyword -> Python expression at launch
    tunables: dict = field(default_factory=dict)  # name -> default
    space: dict = field(default_factory=dict)  # name -> allowed values
    kind: str = ""
    note: str = ""  # what the kernel computes, for the candidate's comments
    temps: list = field(default_factory=list)  # (python name, shape, dtype name) allocated before launch


def _pow2(n: int) -> int:
    return 1 << max(0, int(n - 1).bit_length())


def _pow2_range(lo: int, hi: int) -> list[int]:
    out, v = [], lo
    while v <= hi:
        out.append(v)
        v *= 2
    return out or [lo]


def _signature(w: KernelWriter, constexprs: list[str]) -> str:
    params = list(w.args) + [f"{c}: tl.constexpr" for c in constexprs]
    return f"@triton.jit\ndef {w.name}({', '.join(params)}):\n"


def _finish(w: KernelWriter, constexprs: list[str]) -> str:
    return _signature(w, constexprs) + "\n".join(w.lines) + "\n"


def _index_type(w: KernelWriter, numel: int, var: str) -> None:
    if numel > INT32_MAX or any(b.meta.numel > INT32_MAX for b in w.buffers.values()):
        w.emit(f"{var} = {var}.to(tl.int64)")


def _loadable(buffers: dict, outputs: list) -> dict:
    """What a kernel may load: every stored value but its own outputs (which it computes)."""
    return {n: b for n, b in buffers.items() if n not in outputs}


def _eval(w: KernelWriter, node, idx, culprit=None, cond=None):
    """w.value, naming the value being computed when a FusionError passes through."""
    try:
        return w.value(node, idx, cond)
    except FusionError as exc:
        if getattr(exc, "culprit", None) is None:
            exc.culprit = culprit if culprit is not None else node
        raise


def _tune(name: str, key: str, default, allowed) -> tuple[str, dict, dict]:
    full = f"{name}_{key}"
    allowed = sorted(set(allowed) | {default})
    return f'T["{full}"]', {full: default}, {full: allowed}


# ---- pointwise -----------------------------------------------------------------------------------------
def pointwise_kernel(name: str, outputs: list, buffers: dict, target: str) -> Kernel:
    numel = math.prod(shape(outputs[0]))
    w = KernelWriter(_loadable(buffers, outputs), name)
    w.emit("xi = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)")
    _index_type(w, numel, "xi")
    w.emit(f"xmask = xi < {numel}")
    w.mask = "xmask"
    xi = Index.var("xi", numel)
    for node in outputs:
        idx = delinearize(xi, shape(node))
        code, _ = _eval(w, node, idx)
        w.store(buffers[node], idx, code, "xmask")
    cap = _pow2(numel)
    default = min(cap, 1 << 16 if target == "cpu" else 1024)  # the interpreter pays per program
    xb, t1, s1 = _tune(name, "XBLOCK", default, [b for b in _pow2_range(64, 8192) if b <= max(cap, 64)])
    nw, t2, s2 = _tune(name, "num_warps", 4, [1, 2, 4, 8])
    return Kernel(name, _finish(w, ["XBLOCK"]), list(w.args), f"(triton.cdiv({numel}, {xb}),)",
                  {"XBLOCK": xb, "num_warps": nw}, {**t1, **t2}, {**s1, **s2}, "pointwise",
                  f"pointwise over {numel} elements -> {', '.join(n.name for n in outputs)}")


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
    w = KernelWriter(_loadable(buffers, outputs), name)
    w.emit("xi = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)[:, None]")
    _index_type(w, xn * rn, "xi")
    w.emit(f"xmask = xi < {xn}")
    xpart = delinearize(Index.var("xi", xn), tuple(full_shape[k] for k in outer))
    rblock = _pow2(rn)

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
            v0, xc = _eval(w, x, full_idx(), red)
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
            v0, xc = _eval(w, x, full_idx(), red)
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
        code, _ = _eval(w, node, idx)
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
            code, _ = _eval(w, node, idx)
            w.store(buffers[node], idx, code, "xmask & rmask")
        if not persistent:
            w.pop()
            w.indent -= 1
    return _reduction_kernel_object(w, name, xn, rn, rblock, persistent, target, reductions, outputs)


def _reduction_kernel_object(w, name, xn, rn, rblock, persistent, target, reductions, outputs) -> Kernel:
    xcap = _pow2(xn)
    if persistent:
        per_prog = max(1, (1 << 18 if target == "cpu" else 4096) // rblock)
        xdefault = min(xcap, _pow2(per_prog) if per_prog & (per_prog - 1) else per_prog)
        xb, t1, s1 = _tune(name, "XBLOCK", xdefault,
                           [b for b in _pow2_range(1, 64) if b <= xcap and b * rblock <= (1 << 20)]
                           if target != "cpu" else [xdefault])
        constexprs = {"XBLOCK": xb, "RBLOCK": str(rblock)}
        tun, space = dict(t1), dict(s1)
    else:
        xb, t1, s1 = _tune(name, "XBLOCK", 1, [b for b in (1, 2, 4, 8) if b <= xcap])
        rdefault = 8192 if target == "cpu" else 1024
        rb, t3, s3 = _tune(name, "RBLOCK", rdefault, [256, 512, 1024, 2048, 4096, 8192])
        constexprs = {"XBLOCK": xb, "RBLOCK": rb}
        tun, space = {**t1, **t3}, {**s1, **s3}
    nw, t2, s2 = _tune(name, "num_warps", 4 if rblock <= 2048 or not persistent else 8, [1, 2, 4, 8, 16])
    constexprs["num_warps"] = nw
    tun.update(t2)
    space.update(s2)
    note = (f"{'persistent' if persistent else 'looped'} reduction of {rn} over {xn} rows: "
            f"{', '.join(r.name for r in reductions)} -> {', '.join(n.name for n in outputs)}")
    return Kernel(name, _finish(w, ["XBLOCK", "RBLOCK"]), list(w.args), f"(triton.cdiv({xn}, {xb}),)",
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
    splits = min(1024, _pow2(max(1, _PROGRAMS // xn)), _pow2(-(-rn // 4096)))
    chunk = -(-rn // splits)
    w = KernelWriter(_loadable(buffers, [red]), f"{name}_part")
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
    v, c = _eval(w, x, full, red)
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
    rb, t1, s1 = _tune(name, "RBLOCK", min(2048, _pow2(chunk)), [256, 512, 1024, 2048, 4096])
    nw, t2, s2 = _tune(name, "num_warps", 8, [2, 4, 8, 16])
    first = Kernel(w.name, _finish(w, ["RBLOCK"]), list(w.args), f"({xn * splits},)",
                   {"RBLOCK": rb, "num_warps": nw}, {**t1, **t2}, {**s1, **s2}, "reduction",
                   f"split reduction ({kind}) of {rn} over {xn} rows, part 1: {splits} chunks of {chunk}",
                   temps=[(part, (xn, splits), part_dtype)])
    # part 2: the rows' results from their chunks
    dst = buffers[red]
    sblock = _pow2(splits)
    lines = ["xi = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)[:, None]",
             f"si = tl.arange(0, {sblock})[None, :]",
             f"m = (xi < {xn}) & (si < {splits})",
             f"p = tl.load({part} + xi * {splits} + si, mask=m, other={init})",
             f"r = {(fn + '(p, 1)') if fn else 'tl.reduce(p, 1, _kkb_mul)'}[:, None]"]
    value = "(r != 0)" if kind in ("any", "all") else ("r" if acc_t == out_t else f"r.to({ops.TL_TYPE[out_t]})")
    lines.append(f"tl.store({dst.name} + xi, {value}.to({dst.name}.dtype.element_ty), mask=xi < {xn})")
    src = (f"@triton.jit\ndef {name}_final({part}, {dst.name}, XBLOCK: tl.constexpr):\n"
           + "\n".join("    " + ln for ln in lines) + "\n")
    xb = min(64, _pow2(xn))
    second = Kernel(f"{name}_final", src, [part, dst.name], f"(triton.cdiv({xn}, {xb}),)",
                    {"XBLOCK": str(xb), "num_warps": "4"}, {}, {}, "reduction",
                    f"split reduction ({kind}), part 2: {splits} partial results per row -> {red.name}")
    return [first, second]


# ---- scans ---------------------------------------------------------------------------------------------
def scan_kernel(name: str, node, outputs: list, buffers: dict, target: str) -> Kernel:
    x = node.args[0]
    full_shape = shape(x)
    dim = node.args[1] % max(len(full_shape), 1)
    is_prod = ops.packet(node) is ops.aten.cumprod
    outer = [k for k in range(len(full_shape)) if k != dim]
    xn = math.prod(full_shape[k] for k in outer)
    rn = full_shape[dim]
    rmax = 1 << 14 if target == "cpu" else 4096
    persistent = rn <= rmax
    w = KernelWriter(_loadable(buffers, outputs), name)
    w.emit("xi = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)[:, None]")
    _index_type(w, xn * rn, "xi")
    w.emit(f"xmask = xi < {xn}")
    xpart = delinearize(Index.var("xi", xn), tuple(full_shape[k] for k in outer))
    ctype = ops.ctype_of(node.meta["val"].dtype)

    def full_idx():
        out, xi_ = [], iter(xpart)
        for k in range(len(full_shape)):
            out.append(Index.var("ri", rn) if k == dim else next(xi_))
        return out

    neutral = "1.0" if is_prod else "0.0"
    if not persistent:
        w.emit(f"carry = tl.full([XBLOCK, 1], {neutral}, tl.float32)")
        w.emit(f"for roff in range(0, {rn}, RBLOCK):")
        w.indent += 1
        w.push()
    w.emit(f"ri = {'roff + ' if not persistent else ''}tl.arange(0, RBLOCK)[None, :]")
    w.emit(f"rmask = ri < {rn}")
    w.mask = "xmask & rmask"
    v, c = _eval(w, x, full_idx(), node)
    v = w.bind(f"tl.where(xmask & rmask, {w.cast(v, c, 'f32')}, {neutral})")
    s = w.bind(f"tl.{'cumprod' if is_prod else 'cumsum'}({v}, axis=1)")
    if not persistent:
        s = w.bind(f"{s} * carry" if is_prod else f"{s} + carry")
    res = w.bind(w.cast(s, "f32", ctype))
    w.homes[node] = (full_idx(), res, ctype)
    for out in outputs:
        idx = delinearize(linearize(full_idx(), full_shape), shape(out))
        code, _ = _eval(w, out, idx)
        w.store(buffers[out], idx, code, "xmask & rmask")
    if not persistent:
        last = f"tl.reduce({v}, 1, _kkb_mul)[:, None]" if is_prod else f"tl.sum({v}, 1)[:, None]"
        w.emit(f"carry = carry * {last}" if is_prod else f"carry = carry + {last}")
        w.pop()
        w.indent -= 1
    rblock = _pow2(rn) if persistent else None
    xcap = _pow2(xn)
    if persistent:
        xb, t1, s1 = _tune(name, "XBLOCK", min(xcap, max(1, (1 << 14) // rblock)),
                           [b for b in _pow2_range(1, 64) if b <= xcap])
        constexprs = {"XBLOCK": xb, "RBLOCK": str(rblock)}
        tun, space = t1, s1
    else:
        xb, t1, s1 = _tune(name, "XBLOCK", 1, [b for b in (1, 2, 4) if b <= xcap])
        rb, t3, s3 = _tune(name, "RBLOCK", 4096 if target == "cpu" else 1024, [256, 512, 1024, 2048, 4096])
        constexprs = {"XBLOCK": xb, "RBLOCK": rb}
        tun, space = {**t1, **t3}, {**s1, **s3}
    nw, t2, s2 = _tune(name, "num_warps", 4, [1, 2, 4, 8])
    constexprs["num_warps"] = nw
    return Kernel(name, _finish(w, ["XBLOCK", "RBLOCK"]), list(w.args), f"(triton.cdiv({xn}, {xb}),)",
                  constexprs, {**tun, **t2}, {**space, **s2}, "scan",
                  f"{'cumprod' if is_prod else 'cumsum'} over {rn} for {xn} rows -> "
                  f"{', '.join(n.name for n in outputs)}")


# ---- top-k ---------------------------------------------------------------------------------------------
def topk_kernel(name: str, node, outputs: list, buffers: dict, target: str) -> Kernel:
    """The k largest (or smallest) of each row, sorted, by k rounds of max-and-mask over the whole row
    (a sort is the top-k of the whole row, for short rows)."""
    a = list(node.args) + [None] * 4
    x = a[0]
    full_shape = shape(x)
    if ops.packet(node) is ops.aten.sort:
        dim = (a[1] if a[1] is not None else node.kwargs.get("dim", -1)) % max(len(full_shape), 1)
        largest = bool(a[2] if a[2] is not None else node.kwargs.get("descending", False))
        k = full_shape[dim]
    else:
        k = int(a[1])
        dim = (a[2] if a[2] is not None else node.kwargs.get("dim", -1)) % max(len(full_shape), 1)
        largest = a[3] if a[3] is not None else node.kwargs.get("largest", True)
    rn = full_shape[dim]
    if rn > (1 << 16 if target == "cpu" else 16384) or k > 128:
        raise LoweringError(f"top {k} (or a sort) over rows of {rn}: rows up to 16384 and k <= 128 are lowered")
    outer = [d for d in range(len(full_shape)) if d != dim]
    xn = math.prod(full_shape[d] for d in outer)
    w = KernelWriter(_loadable(buffers, outputs), name)
    w.emit("xi = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)[:, None]")
    w.emit(f"xmask = xi < {xn}")
    w.emit("ri = tl.arange(0, RBLOCK)[None, :]")
    w.emit(f"rmask = ri < {rn}")
    w.mask = "xmask & rmask"
    xpart = delinearize(Index.var("xi", xn), tuple(full_shape[d] for d in outer))

    def at(position: Index) -> list[Index]:
        out, xs = [], iter(xpart)
        for d in range(len(full_shape)):
            out.append(position if d == dim else next(xs))
        return out

    v, c = _eval(w, x, at(Index.var("ri", rn)), node)
    sign = "" if largest else "-"
    v = w.bind(f"tl.where(xmask & rmask, {sign}{w.cast(v, c, 'f32')}, -float(\"inf\"))")
    values = next((o for o in outputs if o.args[1] == 0), None)
    indices = next((o for o in outputs if o.args[1] == 1), None)
    w.mask = "xmask"
    for j in range(k):
        m = w.bind(f"tl.max({v}, 1)[:, None]")
        i = w.bind(f"tl.min(tl.where({v} == {m}, ri, {rn}), 1)[:, None]")
        if values is not None:
            w.store(buffers[values], at(Index.of(j)), f"{sign}{m}", "xmask")
        if indices is not None:
            w.store(buffers[indices], at(Index.of(j)), i, "xmask")
        if j + 1 < k:
            v = w.bind(f"tl.where(ri == {i}, -float(\"inf\"), {v})")
    xb = min(_pow2(xn), max(1, (1 << 16 if target == "cpu" else 2048) // _pow2(rn)))
    return Kernel(name, _finish(w, ["XBLOCK", "RBLOCK"]), list(w.args), f"(triton.cdiv({xn}, {xb}),)",
                  {"XBLOCK": str(xb), "RBLOCK": str(_pow2(rn)), "num_warps": "4"}, {}, {}, "topk",
                  f"top {k} of rows of {rn} ({xn} rows) -> {', '.join(o.name for o in outputs)}")


# ---- scatters ------------------------------------------------------------------------------------------
def scatter_kernels(name: str, node, buffers: dict, target: str) -> list[Kernel]:
    """index_put / scatter / scatter_add: the tensor copied, then the written elements stored (or added
    atomically, where the reference accumulates)."""
    p = ops.packet(node)
    dst_node = node.args[0]
    out = buffers[node]
    out_shape = shape(node)
    numel = math.prod(out_shape)
    masked = p is ops.aten.index_put and any(
        t is not None and t.meta["val"].dtype == torch_bool() for t in node.args[1])
    if masked:  # x[mask] = value: a where, when one value fills every selected element
        mask_nodes = [t for t in node.args[1] if t is not None]
        if len(mask_nodes) != 1 or math.prod(shape(node.args[2])) != 1 or node.args[1][0] is None:
            raise LoweringError(f"{node.name}: a boolean index writing a tensor of values (its size depends "
                                "on the data) is not lowered")
    # part 1: the copy of the tensor written into (its own kernel: the writes may land anywhere)
    w = KernelWriter(_loadable(buffers, [node]), f"{name}_copy")
    w.emit("xi = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)")
    _index_type(w, numel, "xi")
    w.emit(f"xmask = xi < {numel}")
    w.mask = "xmask"
    idx = delinearize(Index.var("xi", numel), out_shape)
    code, c = _eval(w, dst_node, idx, node)
    if masked:
        mask_node, fill = node.args[1][0], node.args[2]
        m, mc = _eval(w, mask_node, idx[:len(shape(mask_node))], node)
        f, fc = _eval(w, fill, [Index.of(0)] * len(shape(fill)), node)
        ctype = ops.ctype_of(node.meta["val"].dtype)
        code = w.bind(f"tl.where({w.cast(m, mc, 'i1')}, {w.cast(f, fc, ctype)}, {w.cast(code, c, ctype)})")
    w.store(out, idx, code, "xmask")
    xb = min(_pow2(numel), 1 << 16 if target == "cpu" else 1024)
    copy = Kernel(w.name, _finish(w, ["XBLOCK"]), list(w.args), f"(triton.cdiv({numel}, {xb}),)",
                  {"XBLOCK": str(xb), "num_warps": "4"}, {}, {}, "scatter", f"copy of {dst_node.name} into {node.name}")
    if masked:
        return [copy]
    # part 2: one lane per written element
    if p is ops.aten.index_put:
        indices, values = list(node.args[1]), node.args[2]
        accumulate = bool(node.args[3] if len(node.args) > 3 else node.kwargs.get("accumulate", False))
        present = [k for k, t in enumerate(indices) if t is not None]
        if present != list(range(len(present))):
            raise LoweringError(f"{node.name}: index_put with indices not leading the dims is not lowered")
        b_shape = tuple(torch_broadcast([shape(indices[k]) for k in present]))
        src_shape = b_shape + out_shape[len(present):]
    else:
        dim = node.args[1] % len(out_shape)
        index = node.args[2]
        values = node.args[3] if len(node.args) > 3 else node.kwargs.get("src", node.kwargs.get("value"))
        accumulate = p is ops.aten.scatter_add
        src_shape = shape(index)
    n = math.prod(src_shape)
    w = KernelWriter(_loadable(buffers, [node]), f"{name}_write")
    w.emit("xi = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)")
    _index_type(w, n, "xi")
    w.emit(f"xmask = xi < {n}")
    w.mask = "xmask"
    sidx = delinearize(Index.var("xi", n), src_shape)
    if p is ops.aten.index_put:
        lead = [w.arg_idx(indices[k], b_shape, sidx[:len(b_shape)]) for k in present]
        target_idx = []
        for k, at in zip(present, lead):
            v, c = _eval(w, indices[k], at, node)
            v = w.bind(w.cast(v, c, "i64"))
            target_idx.append(Index.opaque(w.bind(f"tl.where({v} < 0, {v} + {out_shape[k]}, {v})")))
        target_idx += sidx[len(b_shape):]
    else:
        v, c = _eval(w, index, sidx, node)
        v = w.bind(w.cast(v, c, "i64"))
        target_idx = list(sidx)
        target_idx[dim] = Index.opaque(w.bind(f"tl.where({v} < 0, {v} + {out_shape[dim]}, {v})"))
    if isinstance(values, type(node)):
        val, vc = _eval(w, values, w.arg_idx(values, src_shape, sidx), node)
    else:
        val, vc = ops.code(w, values, "f32"), "f32"
    val = w.bind(w.cast(val, vc, ops.ctype_of(node.meta["val"].dtype)))
    ptr = w.arg(out)
    off = address(target_idx, out.meta.stride).render()
    if accumulate:
        w.emit(f"tl.atomic_add({ptr} + ({off}), {val}.to({ptr}.dtype.element_ty), mask=xmask)")
    else:
        w.emit(f"tl.store({ptr} + ({off}), {val}.to({ptr}.dtype.element_ty), mask=xmask)")
    xb2 = min(_pow2(n), 1 << 16 if target == "cpu" else 1024)
    write = Kernel(w.name, _finish(w, ["XBLOCK"]), list(w.args), f"(triton.cdiv({n}, {xb2}),)",
                   {"XBLOCK": str(xb2), "num_warps": "4"}, {}, {}, "scatter",
                   f"{'atomic adds' if accumulate else 'stores'} of {n} elements into {node.name}")
    return [copy, write]


def torch_bool():
    import torch

    return torch.bool


def torch_broadcast(shapes: list[tuple]) -> tuple:
    import torch

    return tuple(torch.broadcast_shapes(*shapes))


# ---- matmul --------------------------------------------------------------------------------------------
def _dot_types(*operands) -> str:
    kinds = {str(o.meta["val"].dtype).removeprefix("torch.") for o in operands}
    if kinds <= {"bfloat16"}:
        return "tl.bfloat16"
    if kinds <= {"float16"}:
        return "tl.float16"
    return "tl.float32"


def _gemm_tunables(name, m, n, k, target, dot_t):
    tun, space, exprs = {}, {}, {}
    cap = lambda v: max(16, min(_pow2(v), 256))
    if target == "cpu":  # the interpreter pays per operation, not per element: few, large tiles
        defaults = {"BLOCK_M": min(cap(m) if m <= 256 else _pow2(m), 2048), "BLOCK_N": min(cap(n), 128),
                    "BLOCK_K": min(cap(k), 128)}
    else:
        defaults = {"BLOCK_M": min(cap(m), 128), "BLOCK_N": min(cap(n), 128),
                    "BLOCK_K": min(cap(k), 64 if dot_t != "tl.float32" else 32)}
    for key, default in defaults.items():
        e, t, s = _tune(name, key, default, [v for v in (16, 32, 64, 128, 256) if v <= max(default, 16) * 2]
                        if target != "cpu" else [default])
        exprs[key], tun, space = e, {**tun, **t}, {**space, **s}
    big_tile = defaults["BLOCK_M"] * defaults["BLOCK_N"] >= 128 * 128
    for key, default, allowed in (("GROUP_M", 8, [1, 4, 8, 16]), ("num_warps", 8 if big_tile else 4, [2, 4, 8]),
                                  ("num_stages", 3, [2, 3, 4, 5])):
        e, t, s = _tune(name, key, default, allowed)
        exprs[key], tun, space = e, {**tun, **t}, {**space, **s}
    if dot_t == "tl.float32":  # fp32 inputs: exact fp32 products, or three TF32 products (same accuracy)
        e, t, s = _tune(name, "PREC", "ieee" if target == "cpu" else "tf32x3", ["ieee", "tf32x3"])
        exprs["PREC"], tun, space = e, {**tun, **t}, {**space, **s}
    return exprs, tun, space


def _tile_order(w: KernelWriter, m: int, n: int) -> None:
    w.emit(f"num_m = tl.cdiv({m}, BLOCK_M)")
    w.emit(f"num_n = tl.cdiv({n}, BLOCK_N)")
    w.emit("group = GROUP_M * num_n")
    w.emit("first_m = (pid // group) * GROUP_M")
    w.emit("size_m = tl.minimum(num_m - first_m, GROUP_M)")
    w.emit("pid_m = first_m + (pid % group) % size_m")
    w.emit("pid_n = (pid % group) // size_m")


def _store_epilogue(w: KernelWriter, node, canon: list[Index], outputs: list, buffers: dict, mask: str):
    w.mask = mask
    for out in outputs:
        idx = delinearize(linearize(canon, shape(node)), shape(out))
        code, _ = _eval(w, out, idx)
        w.store(buffers[out], idx, code, mask)


def gemm_kernel(name: str, node, outputs: list, buffers: dict, target: str) -> Kernel:
    p = ops.packet(node)
    if p is ops.aten.addmm:
        bias, a, b = node.args[0], node.args[1], node.args[2]
        beta, alpha = node.kwargs.get("beta", 1), node.kwargs.get("alpha", 1)
    else:
        bias, (a, b), beta, alpha = None, node.args[:2], 1, 1
    out = shape(node)
    batched = len(out) == 3
    m, n = out[-2], out[-1]
    k = shape(a)[-1]
    nb = out[0] if batched else 1
    dot_t = _dot_types(a, b)
    w = KernelWriter(_loadable(buffers, outputs), name)
    w.tile_var = "(mi + ni)"
    w.emit("pid = tl.program_id(0)")
    _tile_order(w, m, n)
    w.emit("mi = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)[:, None]")
    w.emit("ni = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)[None, :]")
    if batched:
        w.emit("bi = tl.program_id(1)")
    big = nb * m * k > INT32_MAX or nb * k * n > INT32_MAX or nb * m * n > INT32_MAX
    if big:
        w.emit("mi = mi.to(tl.int64)")
        w.emit("ni = ni.to(tl.int64)")
    mi, ni = Index.var("mi", m), Index.var("ni", n)
    bi = [Index.var("bi", nb)] if batched else []
    w.emit("acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)")
    w.emit(f"for k0 in range(0, {k}, BLOCK_K):")
    w.indent += 1
    w.push()
    w.emit("ka = k0 + tl.arange(0, BLOCK_K)[None, :]")
    w.emit("kb = k0 + tl.arange(0, BLOCK_K)[:, None]")
    w.mask, w.tile_var = f"(mi < {m}) & (ka < {k})", "(mi + ka)"
    av, ac = _eval(w, a, bi + [mi, Index.var("ka", k)], node)
    w.mask, w.tile_var = f"(kb < {k}) & (ni < {n})", "(kb + ni)"
    bv, bc = _eval(w, b, bi + [Index.var("kb", k), ni], node)
    # lanes past the edges may hold inf or NaN (a prologue of 0/0 on padding): zero them before the dot
    av = w.bind(f"tl.where((mi < {m}) & (ka < {k}), {w.cast(av, ac, 'f32')}, 0.0)")
    bv = w.bind(f"tl.where((kb < {k}) & (ni < {n}), {w.cast(bv, bc, 'f32')}, 0.0)")
    if dot_t == "tl.float32":
        w.emit(f"acc += tl.dot({av}, {bv}, input_precision=PREC)")
    else:
        w.emit(f"acc += tl.dot({av}.to({dot_t}), {bv}.to({dot_t}))")
    w.pop()
    w.indent -= 1
    canon = bi + [mi, ni]
    mask = f"(mi < {m}) & (ni < {n})"
    w.tile_var = "(mi + ni)"
    value = "acc" if alpha == 1 else f"acc * {float(alpha)}"
    if bias is not None:
        w.mask = mask
        bv, bc = _eval(w, bias, w.arg_idx(bias, out, canon))
        value = f"{value} + {w.cast(bv, bc, 'f32')}" if beta == 1 else f"{value} + {float(beta)} * {bv}"
    res = w.bind(w.round_to(w.cast(value, "f32", ops.ctype_of(node.meta["val"].dtype)),
                            str(node.meta["val"].dtype).removeprefix("torch.")))
    w.homes[node] = (canon, res, ops.ctype_of(node.meta["val"].dtype))
    _store_epilogue(w, node, canon, outputs, buffers, mask)
    exprs, tun, space = _gemm_tunables(name, m, n, k, target, dot_t)
    constexprs = ["BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M"] + (["PREC"] if "PREC" in exprs else [])
    grid = f"(triton.cdiv({m}, {exprs['BLOCK_M']}) * triton.cdiv({n}, {exprs['BLOCK_N']}), {nb})"
    return Kernel(name, _finish(w, constexprs), list(w.args), grid, exprs, tun, space, "gemm",
                  f"matmul {nb}x{m}x{n}x{k} ({dot_t.removeprefix('tl.')}) with its epilogue -> "
                  f"{', '.join(o.name for o in outputs)}")


# ---- convolution ---------------------------------------------------------------------------------------
def _conv_args(node):
    a = list(node.args)
    x, wt, bias = a[0], a[1], a[2]
    stride, padding, dilation = list(a[3]), list(a[4]), list(a[5])
    transposed, groups = bool(a[6]), int(a[8])
    return x, wt, bias, stride, padding, dilation, transposed, groups


def _conv_coords(o, kk, stride, padding, dilation, transposed, sp_in):
    """Input coordinates and their validity for output coords `o` and kernel offsets `kk`."""
    coords, valid = [], None
    for j in range(len(o)):
        if not transposed:
            c = o[j] * stride[j] - padding[j] + kk[j] * dilation[j]
            r = c.render()
            cond = f"(({r}) >= 0) & (({r}) < {sp_in[j]})"
        else:
            t = o[j] + padding[j] - kk[j] * dilation[j]
            r = t.render()
            c = t // stride[j] if stride[j] > 1 else t
            cond = f"(({r}) >= 0) & (({c.render()}) < {sp_in[j]})"
            if stride[j] > 1:
                cond += f" & ((({r}) % {stride[j]}) == 0)"
        coords.append(c)
        valid = cond if valid is None else f"{valid} & {cond}"
    return coords, valid


def conv_kernel(name: str, node, outputs: list, buffers: dict, target: str, impl: str | None = None) -> Kernel:
    x, wt, bias, stride, padding, dilation, transposed, groups = _conv_args(node)
    out = shape(node)
    nbatch, cout, sp_out = out[0], out[1], out[2:]
    cin, sp_in = shape(x)[1], shape(x)[2:]
    ksz = shape(wt)[2:]
    cin_g, cout_g = cin // groups, cout // groups
    kdim = cin_g * math.prod(ksz)
    if impl is None:
        impl = "dot" if cout_g >= 16 and kdim >= 16 else "direct"
    if impl == "direct":
        return _conv_direct(name, node, outputs, buffers, target)
    m = nbatch * math.prod(sp_out)
    dot_t = _dot_types(x, wt)
    w = KernelWriter(_loadable(buffers, outputs), name)
    w.tile_var = "(mi + ni)"
    w.emit("pid = tl.program_id(0)")
    _tile_order(w, m, cout_g)
    w.emit("mi = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)[:, None]")
    w.emit("ni = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)[None, :]")
    w.emit("gi = tl.program_id(1)")
    if max(math.prod(shape(x)), math.prod(out)) > INT32_MAX:
        w.emit("mi = mi.to(tl.int64)")
    mi, ni, gi = Index.var("mi", m), Index.var("ni", cout_g), Index.var("gi", groups)
    mpart = delinearize(mi, (nbatch,) + tuple(sp_out))
    b_idx, o = mpart[0], mpart[1:]
    w.emit("acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)")
    w.emit(f"for k0 in range(0, {kdim}, BLOCK_K):")
    w.indent += 1
    w.push()
    w.emit("ka = k0 + tl.arange(0, BLOCK_K)[None, :]")
    w.emit("kb = k0 + tl.arange(0, BLOCK_K)[:, None]")
    kpart = delinearize(Index.var("ka", kdim), (cin_g,) + tuple(ksz))
    coords, valid = _conv_coords(o, kpart[1:], stride, padding, dilation, transposed, sp_in)
    w.mask, w.tile_var = f"(mi < {m}) & (ka < {kdim})", "(mi + ka)"
    av, ac = _eval(w, x, [b_idx, gi * cin_g + kpart[0]] + coords, node, valid)
    kb = delinearize(Index.var("kb", kdim), (cin_g,) + tuple(ksz))
    w.mask, w.tile_var = f"(kb < {kdim}) & (ni < {cout_g})", "(kb + ni)"
    if not transposed:
        bv, bc = _eval(w, wt, [gi * cout_g + ni, kb[0]] + kb[1:])
    else:
        bv, bc = _eval(w, wt, [gi * cin_g + kb[0], ni] + kb[1:])
    av = w.bind(f"tl.where((mi < {m}) & (ka < {kdim}) & ({valid}), {w.cast(av, ac, 'f32')}, 0.0)")
    bv = w.bind(f"tl.where((kb < {kdim}) & (ni < {cout_g}), {w.cast(bv, bc, 'f32')}, 0.0)")
    if dot_t == "tl.float32":
        w.emit(f"acc += tl.dot({av}, {bv}, input_precision=PREC)")
    else:
        w.emit(f"acc += tl.dot({av}.to({dot_t}), {bv}.to({dot_t}))")
    w.pop()
    w.indent -= 1
    canon = [b_idx, gi * cout_g + ni] + o
    mask = f"(mi < {m}) & (ni < {cout_g})"
    w.tile_var = "(mi + ni)"
    _conv_bias_and_store(w, node, bias, canon, outputs, buffers, mask)
    exprs, tun, space = _gemm_tunables(name, m, cout_g, kdim, target, dot_t)
    constexprs = ["BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M"] + (["PREC"] if "PREC" in exprs else [])
    grid = f"(triton.cdiv({m}, {exprs['BLOCK_M']}) * triton.cdiv({cout_g}, {exprs['BLOCK_N']}), {groups})"
    kind = "transposed " if transposed else ""
    return Kernel(name, _finish(w, constexprs), list(w.args), grid, exprs, tun, space, "conv",
                  f"{kind}convolution as an implicit matmul ({m}x{cout_g}x{kdim}, {groups} groups) -> "
                  f"{', '.join(o.name for o in outputs)}")


def _conv_bias_and_store(w, node, bias, canon, outputs, buffers, mask):
    w.mask = mask
    value = "acc"
    if isinstance(bias, type(node)):
        bv, bc = _eval(w, bias, [canon[1]])
        value = f"acc + {w.cast(bv, bc, 'f32')}"
    ctype = ops.ctype_of(node.meta["val"].dtype)
    res = w.bind(w.round_to(w.cast(value, "f32", ctype), str(node.meta["val"].dtype).removeprefix("torch.")))
    w.homes[node] = (canon, res, ctype)
    _store_epilogue(w, node, canon, outputs, buffers, mask)


def _conv_direct(name: str, node, outputs: list, buffers: dict, target: str) -> Kernel:
    """One output element per lane, products summed over input channels and the window: for depthwise
    and thin convolutions, where a matmul tile would be mostly padding."""
    x, wt, bias, stride, padding, dilation, transposed, groups = _conv_args(node)
    out = shape(node)
    cin, sp_in, ksz = shape(x)[1], shape(x)[2:], shape(wt)[2:]
    cout = out[1]
    cin_g, cout_g = cin // groups, cout // groups
    numel = math.prod(out)
    w = KernelWriter(_loadable(buffers, outputs), name)
    w.emit("xi = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)")
    _index_type(w, numel, "xi")
    w.emit(f"xmask = xi < {numel}")
    w.mask = "xmask"
    canon = delinearize(Index.var("xi", numel), out)
    b_idx, co, o = canon[0], canon[1], canon[2:]
    g = co // cout_g
    w.emit("acc = tl.zeros((XBLOCK,), dtype=tl.float32)")
    w.emit(f"for ci in range(0, {cin_g}):")
    w.indent += 1
    w.push()
    ci = Index.var("ci", cin_g)
    # a strided transposed convolution reaches each output from one tap in `stride` per dim: walk only
    # those (tap = phase + stride * t), not the whole window of mostly invalid taps
    phased = transposed and all(d == 1 for d in dilation) and any(st > 1 for st in stride)
    taps = [-(-k // st) for k, st in zip(ksz, stride)] if phased else list(ksz)
    for kk in _offsets(taps):
        if phased:
            koff, coords, valid = [], [], None
            for j, t in enumerate(kk):
                base = o[j] + padding[j]
                koff.append(base % stride[j] + stride[j] * t)
                c = base // stride[j] - t
                coords.append(c)
                cond = (f"(({koff[-1].render()}) < {ksz[j]}) & (({c.render()}) >= 0) & "
                        f"(({c.render()}) < {sp_in[j]})")
                valid = cond if valid is None else f"{valid} & {cond}"
        else:
            koff = [Index.of(v) for v in kk]
            coords, valid = _conv_coords(o, koff, stride, padding, dilation, transposed, sp_in)
        xv, xc = _eval(w, x, [b_idx, g * cin_g + ci] + coords, node, valid)
        if not transposed:
            wv, wc = _eval(w, wt, [co, ci] + koff)
        else:
            wv, wc = _eval(w, wt, [g * cin_g + ci, co % cout_g] + koff, cond=valid if phased else None)
        w.emit(f"acc += tl.where({valid}, {w.cast(xv, xc, 'f32')}, 0.0) * {w.cast(wv, wc, 'f32')}")
    w.pop()
    w.indent -= 1
    _conv_bias_and_store(w, node, bias, canon, outputs, buffers, "xmask")
    cap = _pow2(numel)
    xb, t1, s1 = _tune(name, "XBLOCK", min(cap, 1 << 16 if target == "cpu" else 256),
                       [b for b in _pow2_range(64, 4096) if b <= max(cap, 64)])
    nw, t2, s2 = _tune(name, "num_warps", 4, [1, 2, 4, 8])
    return Kernel(name, _finish(w, ["XBLOCK"]), list(w.args), f"(triton.cdiv({numel}, {xb}),)",
                  {"XBLOCK": xb, "num_warps": nw}, {**t1, **t2}, {**s1, **s2}, "conv",
                  f"direct convolution, {numel} outputs, {cin_g} channels x {math.prod(ksz)} taps each -> "
                  f"{', '.join(o.name for o in outputs)}")


def _offsets(ksz):
    import itertools

    return list(itertools.product(*[range(k) for k in ksz]))


__all__ = [
    "Buffer",
    "FusionError",
    "Kernel",
    "conv_kernel",
    "gemm_kernel",
    "pointwise_kernel",
    "reduce_info",
    "reduction_kernel",
    "scan_kernel",
]
