"""Kernels over whole rows: scans (cumsum, cumprod) and top-k / sort.

Usage: k = scan_kernel("k2", node, outputs, buffers, "cuda"); k = topk_kernel("k3", node, outputs, buffers, "cpu")
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
from agent_client.lowering.kernels.reduction import RowLimits, row_limits
from agent_client.lowering.writer import KernelWriter, LoweringError, shape


# ---- scans ---------------------------------------------------------------------------------------------
def scan_kernel(name: str, node, outputs: list, buffers: dict, target: str, limits: RowLimits | None = None) -> Kernel:
    """A cumulative sum or product along one dim, a program a row (or XBLOCK rows): whole rows in registers, or
    RBLOCK values at a time with the running result carried. meta["kkb_scan"] (normalize.py) asks for the
    scan from the row's end ("reverse") or of the values before each position ("exclusive", sums)."""
    x = node.args[0]
    full_shape = shape(x)
    dim = node.args[1] % max(len(full_shape), 1)
    is_prod = ops.packet(node) is ops.aten.cumprod
    form = node.meta.get("kkb_scan", "")
    reverse = form == "reverse"
    outer = [k for k in range(len(full_shape)) if k != dim]
    xn = math.prod(full_shape[k] for k in outer)
    rn = full_shape[dim]
    limits = limits or row_limits(target)
    persistent = rn <= limits.persistent_max // 2  # a scan holds its input and its running sums
    w = KernelWriter(loadable(buffers, outputs), name)
    w.emit("xi = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)[:, None]")
    index_type(w, xn * rn, "xi")
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
    # reverse: blocks from the row's end, the first one partly before the row (masked)
    start = "" if persistent else (f"{rn} - RBLOCK - roff + " if reverse else "roff + ")
    w.emit(f"ri = {start}tl.arange(0, RBLOCK)[None, :]")
    w.emit(f"rmask = (ri < {rn}) & (ri >= 0)" if reverse and not persistent else f"rmask = ri < {rn}")
    w.mask = "xmask & rmask"
    v, c = evaluate(w, x, full_idx(), node)
    v = w.bind(f"tl.where(xmask & rmask, {w.cast(v, c, 'f32')}, {neutral})")
    s = w.bind(f"tl.{'cumprod' if is_prod else 'cumsum'}({v}, axis=1{', reverse=True' if reverse else ''})")
    if not persistent:
        s = w.bind(f"{s} * carry" if is_prod else f"{s} + carry")
    if form == "exclusive":
        s = w.bind(f"{s} - {v}")
    res = w.bind(w.cast(s, "f32", ctype))
    w.homes[node] = (full_idx(), res, ctype)
    for out in outputs:
        idx = delinearize(linearize(full_idx(), full_shape), shape(out))
        code, _ = evaluate(w, out, idx)
        w.store(buffers[out], idx, code, "xmask & rmask")
    if not persistent:
        last = f"tl.reduce({v}, 1, _kkb_mul)[:, None]" if is_prod else f"tl.sum({v}, 1)[:, None]"
        w.emit(f"carry = carry * {last}" if is_prod else f"carry = carry + {last}")
        w.pop()
        w.indent -= 1
    rblock = pow2(rn) if persistent else None
    xcap = pow2(xn)
    if persistent:
        xb, t1, s1 = tune(name, "XBLOCK", min(xcap, max(1, (1 << 14) // rblock)),
                           [b for b in pow2_range(1, 64) if b <= xcap])
        constexprs = {"XBLOCK": xb, "RBLOCK": str(rblock)}
        tun, space = t1, s1
    else:
        xb, t1, s1 = tune(name, "XBLOCK", 1, [b for b in (1, 2, 4) if b <= xcap])
        rb, t3, s3 = tune(name, "RBLOCK", 4096 if target == "cpu" else 1024, [256, 512, 1024, 2048, 4096])
        constexprs = {"XBLOCK": xb, "RBLOCK": rb}
        tun, space = {**t1, **t3}, {**s1, **s3}
    nw, t2, s2 = tune(name, "num_warps", 4, [1, 2, 4, 8])
    constexprs["num_warps"] = nw
    what = f"{form + ' ' if form else ''}{'cumprod' if is_prod else 'cumsum'}"
    return Kernel(name, finish(w, ["XBLOCK", "RBLOCK"]), list(w.args), f"(triton.cdiv({xn}, {xb}),)",
                  constexprs, {**tun, **t2}, {**space, **s2}, "scan",
                  f"{what} over {rn} for {xn} rows -> {', '.join(n.name for n in outputs)}")


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
    w = KernelWriter(loadable(buffers, outputs), name)
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

    v, c = evaluate(w, x, at(Index.var("ri", rn)), node)
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
    xb = min(pow2(xn), max(1, (1 << 16 if target == "cpu" else 2048) // pow2(rn)))
    return Kernel(name, finish(w, ["XBLOCK", "RBLOCK"]), list(w.args), f"(triton.cdiv({xn}, {xb}),)",
                  {"XBLOCK": str(xb), "RBLOCK": str(pow2(rn)), "num_warps": "4"}, {}, {}, "topk",
                  f"top {k} of rows of {rn} ({xn} rows) -> {', '.join(o.name for o in outputs)}")
