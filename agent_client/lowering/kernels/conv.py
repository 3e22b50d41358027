"""Convolution kernels: the implicit matmul (tl.dot tiles with a fused epilogue), and the direct
convolution for depthwise and thin ones.

Usage: k = conv_kernel("k6", node, outputs, buffers, "cuda")
"""

from __future__ import annotations

import math

from agent_client.lowering import ops
from agent_client.lowering.index import Index, delinearize
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
from agent_client.lowering.kernels.dot import (
    _dot_line,
    _dot_types,
    _gemm_tunables,
    _store_epilogue,
    _tile_order,
)
from agent_client.lowering.writer import KernelWriter, shape


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
    w = KernelWriter(loadable(buffers, outputs), name)
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
    av, ac = evaluate(w, x, [b_idx, gi * cin_g + kpart[0]] + coords, node, valid)
    kb = delinearize(Index.var("kb", kdim), (cin_g,) + tuple(ksz))
    w.mask, w.tile_var = f"(kb < {kdim}) & (ni < {cout_g})", "(kb + ni)"
    if not transposed:
        bv, bc = evaluate(w, wt, [gi * cout_g + ni, kb[0]] + kb[1:])
    else:
        bv, bc = evaluate(w, wt, [gi * cin_g + kb[0], ni] + kb[1:])
    av = w.bind(f"tl.where((mi < {m}) & (ka < {kdim}) & ({valid}), {w.cast(av, ac, 'f32')}, 0.0)")
    bv = w.bind(f"tl.where((kb < {kdim}) & (ni < {cout_g}), {w.cast(bv, bc, 'f32')}, 0.0)")
    w.emit(_dot_line(av, bv, dot_t, target))
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
    return Kernel(name, finish(w, constexprs), list(w.args), grid, exprs, tun, space, "conv",
                  f"{kind}convolution as an implicit matmul ({m}x{cout_g}x{kdim}, {groups} groups) -> "
                  f"{', '.join(o.name for o in outputs)}")


def _conv_bias_and_store(w, node, bias, canon, outputs, buffers, mask):
    w.mask = mask
    value = "acc"
    if isinstance(bias, type(node)):
        bv, bc = evaluate(w, bias, [canon[1]])
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
    w = KernelWriter(loadable(buffers, outputs), name)
    w.emit("xi = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)")
    index_type(w, numel, "xi")
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
        xv, xc = evaluate(w, x, [b_idx, g * cin_g + ci] + coords, node, valid)
        if not transposed:
            wv, wc = evaluate(w, wt, [co, ci] + koff)
        else:
            wv, wc = evaluate(w, wt, [g * cin_g + ci, co % cout_g] + koff, cond=valid if phased else None)
        w.emit(f"acc += tl.where({valid}, {w.cast(xv, xc, 'f32')}, 0.0) * {w.cast(wv, wc, 'f32')}")
    w.pop()
    w.indent -= 1
    _conv_bias_and_store(w, node, bias, canon, outputs, buffers, "xmask")
    cap = pow2(numel)
    xb, t1, s1 = tune(name, "XBLOCK", min(cap, 1 << 16 if target == "cpu" else 256),
                       [b for b in pow2_range(64, 4096) if b <= max(cap, 64)])
    nw, t2, s2 = tune(name, "num_warps", 4, [1, 2, 4, 8])
    return Kernel(name, finish(w, ["XBLOCK"]), list(w.args), f"(triton.cdiv({numel}, {xb}),)",
                  {"XBLOCK": xb, "num_warps": nw}, {**t1, **t2}, {**s1, **s2}, "conv",
                  f"direct convolution, {numel} outputs, {cin_g} channels x {math.prod(ksz)} taps each -> "
                  f"{', '.join(o.name for o in outputs)}")


def _offsets(ksz):
    import itertools

    return list(itertools.product(*[range(k) for k in ksz]))

