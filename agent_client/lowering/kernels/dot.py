"""Matmul and convolution kernels (tl.dot tiles with fused prologues and epilogues), and the direct
convolution for depthwise and thin ones.

Usage: k = gemm_kernel("k5", node, outputs, buffers, "cuda"); k = conv_kernel("k6", node, outputs, buffers, "cuda")
"""

from __future__ import annotations

import math

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
from agent_client.lowering.writer import KernelWriter, shape


# ---- matmul --------------------------------------------------------------------------------------------
def _dot_types(*operands) -> str:
    kinds = {str(o.meta["val"].dtype).removeprefix("torch.") for o in operands}
    if kinds <= {"bfloat16"}:
        return "tl.bfloat16"
    if kinds <= {"float16"}:
        return "tl.float16"
    return "tl.float32"


def _dot_line(av: str, bv: str, dot_t: str, target: str) -> str:
    """One K step of the tile product. 16-bit operands meet the tensor cores as 16-bit on a GPU; the CPU
    interpreter's 16-bit dot is wrong (it multiplies bf16 bit patterns), so there the operands stay in fp32:
    they hold 16-bit values exactly, so the products are exact and the sum is fp32, as an MMA's is."""
    if dot_t == "tl.float32":
        return f"acc += tl.dot({av}, {bv}, input_precision=PREC)"
    if target == "cpu":
        return f'acc += tl.dot({av}, {bv}, input_precision="ieee")'
    return f"acc += tl.dot({av}.to({dot_t}), {bv}.to({dot_t}))"


def _gemm_tunables(name, m, n, k, target, dot_t):
    tun, space, exprs = {}, {}, {}
    cap = lambda v: max(16, min(pow2(v), 256))
    if target == "cpu":  # the interpreter pays per operation, not per element: few, large tiles
        defaults = {"BLOCK_M": min(cap(m) if m <= 256 else pow2(m), 2048), "BLOCK_N": min(cap(n), 128),
                    "BLOCK_K": min(cap(k), 128)}
    else:
        defaults = {"BLOCK_M": min(cap(m), 128), "BLOCK_N": min(cap(n), 128),
                    "BLOCK_K": min(cap(k), 64 if dot_t != "tl.float32" else 32)}
    for key, default in defaults.items():
        e, t, s = tune(name, key, default, [v for v in (16, 32, 64, 128, 256) if v <= max(default, 16) * 2]
                        if target != "cpu" else [default])
        exprs[key], tun, space = e, {**tun, **t}, {**space, **s}
    big_tile = defaults["BLOCK_M"] * defaults["BLOCK_N"] >= 128 * 128
    for key, default, allowed in (("GROUP_M", 8, [1, 4, 8, 16]), ("num_warps", 8 if big_tile else 4, [2, 4, 8]),
                                  ("num_stages", 3, [2, 3, 4, 5])):
        e, t, s = tune(name, key, default, allowed)
        exprs[key], tun, space = e, {**tun, **t}, {**space, **s}
    if dot_t == "tl.float32":  # fp32 inputs: exact fp32 products, or three TF32 products (same accuracy)
        e, t, s = tune(name, "PREC", "ieee" if target == "cpu" else "tf32x3", ["ieee", "tf32x3"])
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
        code, _ = evaluate(w, out, idx)
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
    w = KernelWriter(loadable(buffers, outputs), name)
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
    av, ac = evaluate(w, a, bi + [mi, Index.var("ka", k)], node)
    w.mask, w.tile_var = f"(kb < {k}) & (ni < {n})", "(kb + ni)"
    bv, bc = evaluate(w, b, bi + [Index.var("kb", k), ni], node)
    # lanes past the edges may hold inf or NaN (a prologue of 0/0 on padding): zero them before the dot
    av = w.bind(f"tl.where((mi < {m}) & (ka < {k}), {w.cast(av, ac, 'f32')}, 0.0)")
    bv = w.bind(f"tl.where((kb < {k}) & (ni < {n}), {w.cast(bv, bc, 'f32')}, 0.0)")
    w.emit(_dot_line(av, bv, dot_t, target))
    w.pop()
    w.indent -= 1
    canon = bi + [mi, ni]
    mask = f"(mi < {m}) & (ni < {n})"
    w.tile_var = "(mi + ni)"
    value = "acc" if alpha == 1 else f"acc * {float(alpha)}"
    if bias is not None:
        w.mask = mask
        bv, bc = evaluate(w, bias, w.arg_idx(bias, out, canon))
        value = f"{value} + {w.cast(bv, bc, 'f32')}" if beta == 1 else f"{value} + {float(beta)} * {bv}"
    res = w.bind(w.round_to(w.cast(value, "f32", ops.ctype_of(node.meta["val"].dtype)),
                            str(node.meta["val"].dtype).removeprefix("torch.")))
    w.homes[node] = (canon, res, ops.ctype_of(node.meta["val"].dtype))
    _store_epilogue(w, node, canon, outputs, buffers, mask)
    exprs, tun, space = _gemm_tunables(name, m, n, k, target, dot_t)
    constexprs = ["BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M"] + (["PREC"] if "PREC" in exprs else [])
    grid = f"(triton.cdiv({m}, {exprs['BLOCK_M']}) * triton.cdiv({n}, {exprs['BLOCK_N']}), {nb})"
    return Kernel(name, finish(w, constexprs), list(w.args), grid, exprs, tun, space, "gemm",
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

