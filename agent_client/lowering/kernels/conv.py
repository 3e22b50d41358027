"""Convolution kernels: the conv family's implicit GEMM mainloop with the op graph's epilogue fused, and the
direct convolution for depthwise and thin ones.

Usage: k = conv_kernel("k6", node, outputs, buffers, "cuda")
"""

from __future__ import annotations

import math

from agent_client.lowering import ops
from agent_client.lowering.errors import FusionError
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
from agent_client.lowering.kernels.conv_source import gcd_inverse, mainloop_source
from agent_client.lowering.kernels.dot import _store_epilogue, _tile_order
from agent_client.lowering.kernels.reduction import _acc_type, _finalize, _init_lit, reduce_info
from agent_client.lowering.writer import Buffer, KernelWriter, LoweringError, shape


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


def conv_kernel(name: str, node, outputs: list, buffers: dict, target: str, impl: str | None = None,
                reductions: tuple = ()) -> Kernel:
    """The convolution `node` with its epilogue; `reductions` over its channels (a softmax's, a min over
    channels) are computed in the tile too, where `holds_channels` said it can."""
    if _implicit_gemm(node, impl):
        return _conv_implicit_gemm(name, node, outputs, buffers, target, list(reductions))
    if reductions:
        raise LoweringError(f"{name}: a reduction over channels joined a convolution that is not tiled over all "
                            "its channels")
    return _conv_direct(name, node, outputs, buffers, target)


def _implicit_gemm(node, impl: str | None) -> bool:
    x, wt, groups = node.args[0], node.args[1], int(node.args[8])
    cin_g, cout_g = shape(x)[1] // groups, shape(node)[1] // groups
    kdim = cin_g * math.prod(shape(wt)[2:])
    if len({str(n.meta["val"].dtype) for n in (x, wt)}) != 1:
        return False
    if impl is None:
        return cout_g >= 16 and kdim >= 16
    # an alternative asked for (a route of its own) where it cannot win is refused: a candidate spent on it
    # is one less for the search
    if impl == "direct" and cout_g >= 32 and kdim >= 32:
        raise LoweringError(f"{node.name}: the direct kernel is not tried for a convolution of {cout_g} output "
                            f"channels a group and K = {kdim} (the implicit GEMM serves it)")
    if impl == "dot" and cout_g < 8:
        raise LoweringError(f"{node.name}: the implicit GEMM is not tried for {cout_g} output channels a group "
                            "(a depthwise or thin convolution: the direct kernel serves it)")
    return impl == "dot"


def holds_channels(node, impl: str | None) -> bool:
    """Whether one tile of the convolution's kernel holds every output channel of its pixels: the implicit
    GEMM, one group, at most 256 channels (a reduction over the channels then fits its epilogue)."""
    return _implicit_gemm(node, impl) and int(node.args[8]) == 1 and shape(node)[1] <= 256


def _buffer_of(node, buffers: dict, conv) -> Buffer:
    """The stored tensor the mainloop reads; a computed input (a padded or activated map, a transformed
    weight) is stored first by its own kernel: FusionError asks the scheduler for that."""
    if node not in buffers:
        exc = FusionError(node)
        exc.culprit = conv
        raise exc
    return buffers[node]


def _conv_implicit_gemm(name: str, node, outputs: list, buffers: dict, target: str, reductions: list) -> Kernel:
    """The conv family's mainloop (corpus/kernels/conv/implicit_gemm.py `conv_tile`, pasted once into the
    candidate), then the op graph's epilogue on its accumulator: bias, whatever pointwise chain follows,
    reductions over the channels (one tile holds them all), the stores of every output this kernel
    computes (per element, or per pixel after a reduction)."""
    x, wt, bias, stride, padding, dilation, transposed, groups = _conv_args(node)
    out = shape(node)
    nd = len(out) - 2
    nbatch, cout, sp_out = out[0], out[1], list(out[2:])
    cin, sp_in, ksz = shape(x)[1], list(shape(x)[2:]), list(shape(wt)[2:])
    cin_g, cout_g = cin // groups, cout // groups
    taps = math.prod(ksz)
    xbuf = _buffer_of(x, buffers, node)
    wbuf = _buffer_of(wt, buffers, node)
    lead = 3 - nd
    pad3 = lambda v, fill: [fill] * lead + [int(a) for a in v]
    st, pd, dl = pad3(stride, 1), pad3(padding, 0), pad3(dilation, 1)
    inv = [gcd_inverse(dl[j], st[j]) if transposed else (1, 0) for j in range(3)]
    phases = math.prod(st) if transposed else 1
    q = [-(-o // s) if transposed else o for o, s in zip(pad3(sp_out, 1), st)]
    m_max = nbatch * math.prod(q)
    sx = list(xbuf.meta.stride[:2]) + [0] * lead + list(xbuf.meta.stride[2:])
    packed = f"{name}_w"
    w = KernelWriter(loadable(buffers, outputs), name)
    w.arg(xbuf)
    w.arg(Buffer(packed, wbuf.meta))
    # a transposed convolution's phases vary fastest: the programs writing one region's interleaved outputs
    # run together, so each output sector is whole in L2 before it is written back
    w.emit(f"pid = tl.program_id(0) // {phases}" if phases > 1 else "pid = tl.program_id(0)")
    w.emit("gi = tl.program_id(1)")
    w.emit(f"gp = gi * {phases} + tl.program_id(0) % {phases}" if phases > 1 else "gp = gi")
    _tile_order(w, m_max, cout_g)
    big = max(math.prod(shape(x)), math.prod(out)) > INT32_MAX
    fp32 = str(x.meta["val"].dtype) == "torch.float32"
    sizes = [nbatch, cin_g, cout_g, *pad3(sp_in, 1), *pad3(sp_out, 1), *pad3(ksz, 1), *st, *pd, *dl,
             *[g for g, _ in inv], *[v for _, v in inv], *sx, taps * cin_g * cout_g]
    # the packed weight's order and split are tunables: its strides are launch-time constexprs
    w.emit(f"acc, cn, cod, coh, cow, mp = conv_tile({xbuf.name}, {packed}, pid_m, pid_n, gp, "
           f"{', '.join(str(v) for v in sizes)}, SWT, SWC, SWN, {'SPLIT' if fp32 else False}, "
           f"{groups * taps * cin_g * cout_g}, {transposed}, FLAT, {big}, PREC, {target == 'cpu'}, "
           "BLOCK_M, BLOCK_N, BLOCK_K)")
    w.emit("mi = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)[:, None]")
    w.emit("ni = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)[None, :]")
    coords = ["cod", "coh", "cow"][lead:]
    for v in ["cn"] + coords:
        w.emit(f"{v} = {v}[:, None]")
    canon = [Index.var("cn", nbatch), Index.var("gi", groups) * cout_g + Index.var("ni", cout_g)]
    canon += [Index.var(v, o) for v, o in zip(coords, sp_out)]
    w.tile_var = "(mi + ni)"
    # conv_tile's rows past the edge repeat row 0: the epilogue's loads need only the channel mask (a
    # per-channel parameter stays a [1, BLOCK_N] load), its stores the row mask too
    load_mask, mask = f"(ni < {cout_g})", f"(mi < mp) & (ni < {cout_g})"
    full = [o for o in outputs if math.prod(shape(o)) == math.prod(out)]
    _conv_bias_and_store(w, node, bias, canon, [], buffers, load_mask)
    if reductions:  # their statistics first: per-element outputs may read them (a softmax)
        _channel_reductions(w, reductions, canon, cout_g)
    w.tile_var = "(mi + ni)"
    for o in full:
        w.mask = load_mask
        idx = delinearize(linearize(canon, out), shape(o))
        code, _ = evaluate(w, o, idx)
        w.store(buffers[o], idx, code, mask)
    if reductions:
        _row_outputs(w, reductions, canon, [o for o in outputs if o not in full], buffers)
    exprs, tun, space = _conv_tunables(name, m_max, cout_g, cin_g, taps, target, fp32, bool(reductions))
    kn = f'{exprs["PACK"]} == "kn"'
    exprs.update(SWT=f"({cin_g * cout_g} if {kn} else {cin_g})", SWC=f"({cout_g} if {kn} else 1)",
                 SWN=f"(1 if {kn} else {taps * cin_g})")
    split = exprs.pop("SPLIT", "False")
    if fp32:
        exprs["SPLIT"] = split
    grid = f"(triton.cdiv({m_max}, {exprs['BLOCK_M']}) * triton.cdiv({cout_g}, {exprs['BLOCK_N']}) * {phases}, " \
           f"{groups})"
    kind = "transposed " if transposed else ""
    pack = exprs.pop("PACK")
    host = [f"{packed} = conv_packed_weight({wbuf.name}, {bool(transposed)}, {groups}, {pack}, {split})"]
    constexprs = ["BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "PREC", "FLAT", "SWT", "SWC", "SWN"]
    return Kernel(name, finish(w, constexprs + (["SPLIT"] if fp32 else [])), list(w.args),
                  grid, exprs, tun, space, "conv",
                  f"{kind}{nd}-D convolution as an implicit GEMM ({m_max}x{cout_g}x{cin_g * taps}, {groups} "
                  f"groups{f', {phases} phases' if phases > 1 else ''}) -> {', '.join(o.name for o in outputs)}",
                  host=host, helpers=[mainloop_source()])


def _conv_tunables(name: str, m: int, n: int, cin_g: int, taps: int, target: str, fp32: bool, all_n: bool):
    """The mainloop's tile and walk: output pixels x channels per tile, K step, pipeline depth, precision."""
    flat = cin_g < 16  # few channels a tap: taps x channels as one K, or a channel block would be mostly padding
    k = cin_g * taps if flat else cin_g
    cap = lambda v, hi: max(16, min(pow2(v), hi))
    if target == "cpu":  # the interpreter pays per operation: few, large tiles
        defaults = {"BLOCK_M": cap(m, 1024), "BLOCK_N": cap(n, 128), "BLOCK_K": cap(k, 64)}
    else:
        defaults = {"BLOCK_M": 128, "BLOCK_N": cap(n, 128), "BLOCK_K": cap(k, 32)}
    allowed = {"BLOCK_M": [64, 128, 256], "BLOCK_N": [v for v in (16, 32, 64, 128, 256) if v <= 2 * cap(n, 128)],
               "BLOCK_K": [16, 32, 64]}
    if all_n:  # a reduction over the channels in the epilogue: one tile holds them all
        defaults["BLOCK_N"] = cap(n, 256)
        allowed["BLOCK_N"] = [defaults["BLOCK_N"]]
        if n > 128:
            defaults["BLOCK_M"] = 64
    tun, space, exprs = {}, {}, {}
    for key, default in defaults.items():
        e, t, s = tune(name, key, default, allowed[key] if target != "cpu" else [default])
        exprs[key], tun, space = e, {**tun, **t}, {**space, **s}
    # 8 warps from 128x64 tiles: with 4, a 128x64 fp32 accumulator and a heavy epilogue (two Mish) spill on sm_90
    big_tile = defaults["BLOCK_M"] * defaults["BLOCK_N"] >= 128 * 64
    # fp32: the weight split ahead (SPLIT) and packed with the input channels contiguous (nk), as the family's
    # kernel.py defaults: compiled for sm_90, no weight-tile round trip through registers and about a quarter
    # fewer instructions (corpus/kernels/conv/NOTES.md)
    prec = ["ieee", "tf32x3"] if target == "cpu" else ["tf32x3"]  # fp32 FMA never wins on the tensor cores
    for key, default, values in (("GROUP_M", 8, [1, 4, 8, 16]), ("num_warps", 8 if big_tile else 4, [4, 8]),
                                 ("num_stages", 3, [2, 3, 4]), ("FLAT", flat, [False, True]),
                                 ("PREC", "ieee" if target == "cpu" else "tf32x3", prec),
                                 ("PACK", "nk", ["kn", "nk"]), ("SPLIT", fp32, [False, True] if fp32 else [False])):
        e, t, s = tune(name, key, default, values)
        exprs[key], tun, space = e, {**tun, **t}, {**space, **s}
    if target != "cpu":  # as many stages as shared memory holds (a split weight tile counts twice)
        stage = (f"4 * ({exprs['BLOCK_M']} * {exprs['BLOCK_K']} + (2 if {exprs['SPLIT']} else 1) * "
                 f"{exprs['BLOCK_K']} * {exprs['BLOCK_N']})")
        exprs["num_stages"] = f"max(1, min({exprs['num_stages']}, 200000 // ({stage})))"
    return exprs, tun, space


def _channel_reductions(w, reductions: list, canon: list, cout: int) -> None:
    """Reductions over dim 1 of the convolution's output, each a [BLOCK_M, 1] column of the tile."""
    w.mask = f"(ni < {cout})"
    for red in reductions:
        kind, x, dims, keep = reduce_info(red)
        if dims != [1] or kind in ("argmax", "argmin"):
            raise LoweringError(f"{red.name}: only sums, products, maxima and minima over the channels are "
                                "computed in a convolution's tile")
        v0, xc = evaluate(w, x, canon, red)
        acc_t = _acc_type(kind, red, xc)
        init = _init_lit(kind, acc_t)
        v = w.bind(f"tl.where(ni < {cout}, {w.cast(v0, xc, acc_t)}, {init})")
        res = w.bind(_finalize(kind, v))
        out_t = ops.ctype_of(red.meta["val"].dtype)
        res = w.bind(w.round_to(w.cast(res, acc_t, out_t), str(red.meta["val"].dtype).removeprefix("torch.")))
        w.homes[red] = ([canon[0], Index.of(0), *canon[2:]] if keep else [canon[0], *canon[2:]], res, out_t)


def _row_outputs(w, reductions: list, canon: list, row_outputs: list, buffers: dict) -> None:
    """The outputs of one value per pixel (after a reduction over the channels): [BLOCK_M, 1], by rows."""
    row = [canon[0], Index.of(0), *canon[2:]]
    row_shape = (shape(reductions[0].args[0])[0], 1, *shape(reductions[0].args[0])[2:])
    w.mask, w.tile_var = "(mi < mp)", "mi"
    for o in row_outputs:
        idx = delinearize(linearize(row, row_shape), shape(o))
        code, _ = evaluate(w, o, idx)
        w.store(buffers[o], idx, code, "(mi < mp)")


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

