"""Matmul kernels: the skill library's GEMM main loop with the op graph's epilogue fused after it.

Usage: kernels = gemm_kernels("k5", node, outputs, buffers, "cuda")

A matmul (mm, bmm, addmm) reads its operands as strided tensors: each operand is a chain of views of a stored
buffer, replayed on a meta tensor of the buffer's layout to find its strides. An operand computed from others
(a prologue) is stored first (FusionError), so every GEMM runs the same loop: the gemm_epilogue family's
_gemm_acc (corpus/kernels/gemm_epilogue/mainloop.py), which wraps the rows and columns past the edges instead of
masking them and masks K only where it is not a multiple of BLOCK_K. After it, the generated epilogue computes
everything the kernel stores from the accumulator (bias, activations, scales, residuals) at the tile's indices.
Tiles come from a rule on the shape (_matmul_defaults), with the search's space beside it. A problem with few
output tiles and a long K splits K over programs (SPLIT_K), whose partial tiles a second kernel sums before the
epilogue. A tril/triu of the product skips the K loop of tiles the mask zeroes entirely.

The older helpers below (_dot_types, _dot_line, _gemm_tunables, _tile_order, _store_epilogue) serve the
convolution's implicit GEMM (kernels/conv.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from agent_client.lowering import ops
from agent_client.lowering.errors import FusionError, LoweringError
from agent_client.lowering.index import Index, delinearize, linearize
from agent_client.lowering.kernels.common import (
    INT32_MAX,
    Kernel,
    evaluate,
    finish,
    loadable,
    pow2,
    tune,
)
from agent_client.lowering.kernels.library_code import library_functions
from agent_client.lowering.writer import Buffer, KernelWriter, shape
from agent_client.opgraph.graph import TensorMeta

aten, prims = torch.ops.aten, torch.ops.prims
MAINLOOP = "gemm_epilogue/mainloop"
_SMS = 132  # streaming multiprocessors of the card the defaults are chosen for (an H100); the search moves them


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



# ---- operands as strided tensors -------------------------------------------------------------------------
# views whose replay on a strided meta tensor gives the operand's strides (they never copy: aten.view raises
# where a reshape would have to)
_STRIDED_VIEWS = {aten.view, aten._unsafe_view, aten.permute, aten.t, aten.transpose, aten.expand, aten.unsqueeze,
                  aten.squeeze, aten.slice, aten.select, prims.broadcast_in_dim, prims.squeeze, prims.collapse_view,
                  prims.split_dim, aten.expand_copy, aten.view_copy, aten.permute_copy, aten.squeeze_copy,
                  aten.unsqueeze_copy}
_RESHAPES = {aten.reshape, prims.reshape}  # replayed as aten.view: a layout that needs a copy is stored instead
_SAME_VALUES = {aten.clone, aten.lift_fresh_copy, aten.alias, aten.detach, prims.view_of}


@dataclass(frozen=True)
class Operand:
    buffer: Buffer
    strides: tuple[int, ...]  # of each of the operand's dims, in elements of the buffer
    offset: int  # of the operand's first element


def _operand(node, buffers: dict) -> Operand:
    """The stored buffer an operand views, with its strides; FusionError(x) when x must be stored first."""
    chain, v = [], node
    while v not in buffers:
        p = ops.packet(v) if getattr(v, "op", None) == "call_function" else None
        if p not in _STRIDED_VIEWS and p not in _RESHAPES and p not in _SAME_VALUES:
            raise FusionError(v)
        chain.append(v)
        v = v.args[0]
    buf = buffers[v]
    dtype = getattr(torch, buf.meta.dtype)
    t = torch.empty_strided(buf.meta.shape, buf.meta.stride, dtype=dtype, device="meta")
    for view in reversed(chain):
        p = ops.packet(view)
        if p in _SAME_VALUES:
            continue
        target = aten.view.default if p in _RESHAPES else view.target
        try:
            t = target(t, *view.args[1:], **view.kwargs)
        except (RuntimeError, TypeError, ValueError):
            raise FusionError(view) from None  # not a view of this layout: stored as a tensor of its own
    if tuple(t.shape) != shape(node) or t.dtype != node.meta["val"].dtype:
        raise FusionError(node)
    return Operand(buf, tuple(int(x) for x in t.stride()), int(t.storage_offset()))


# ---- tiles ------------------------------------------------------------------------------------------------
def _matmul_defaults(m: int, n: int, k: int, nb: int, fp32: bool, target: str) -> dict:
    """The tile rule: the library's measured tiles (fp32 128x128x32, 8 warps, 3 stages; 16-bit 128x256x64,
    8 warps, 4 stages), narrowed to the problem's extents, with smaller tiles where the big ones leave SMs idle,
    one K step for a short K, and K split over programs where few tiles meet a long K."""
    cap = lambda v, hi: max(16, min(pow2(v), hi))
    if target == "cpu":  # the interpreter pays per operation, not per element: few, large tiles
        return {"BLOCK_M": min(cap(m, 256) if m <= 256 else pow2(m), 2048), "BLOCK_N": cap(n, 128),
                "BLOCK_K": cap(k, 128), "GROUP_M": 8, "num_warps": 4, "num_stages": 2,
                "SPLIT_K": _split_k(m, n, k, nb, 128, 128, 128)}
    bm, bn, bk = (128, 128, 32) if fp32 else (128, 256, 64)
    bm, bn = cap(m, bm), cap(n, bn)
    tiles = lambda: nb * -(-m // bm) * -(-n // bn)
    long_k = -(-k // bk) >= 256  # few tiles over a long K split the K (SPLIT_K) and keep their size
    while not long_k and tiles() < _SMS and bn > 64 and bn >= bm:  # too few tiles to fill the card: narrower
        bn //= 2
    while not long_k and tiles() < _SMS and bm > 64:
        bm //= 2
    if k <= 2 * bk:  # a short K: one or two steps, the output's store is the cost
        bk = cap(k, 64 if fp32 else 128)
    elif min(m, n) <= 16:  # a matrix-vector product in all but name: memory-bound, deep K steps
        bk = 128
    warps = 8 if bm * bn >= 128 * 128 else 4
    stages = 2 if k <= bk else (3 if fp32 else 4)
    return {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8, "num_warps": warps, "num_stages": stages,
            "SPLIT_K": _split_k(m, n, k, nb, bm, bn, bk)}


def _split_k(m: int, n: int, k: int, nb: int, bm: int, bn: int, bk: int) -> int:
    """Programs a tile's K is split over: about two waves of the card, each part at least 16 K steps long."""
    tiles = nb * -(-m // bm) * -(-n // bn)
    steps = -(-k // bk)
    split = 1
    while nb == 1 and tiles * split * 2 <= 2 * _SMS and steps // (split * 2) >= 16:
        split *= 2
    return split


def _matmul_space(defaults: dict, fp32: bool, target: str) -> dict:
    if target == "cpu":
        return {key: [value] for key, value in defaults.items()}
    blocks = [16, 32, 64, 128, 256]
    space = {"BLOCK_M": [b for b in blocks if b <= max(defaults["BLOCK_M"], 16) * 2],
             "BLOCK_N": [b for b in blocks if b <= max(defaults["BLOCK_N"], 16) * 2],
             "BLOCK_K": [b for b in (16, 32, 64, 128) if b <= max(64 if fp32 else 128, defaults["BLOCK_K"])],
             "GROUP_M": [1, 4, 8, 16], "num_warps": [4, 8], "num_stages": [2, 3, 4, 5]}
    if defaults["SPLIT_K"] > 1:
        space["SPLIT_K"] = [2, 4, 8, 16, 32, 64, 128]
    else:
        space["SPLIT_K"] = [1]
    return space


def _tunables(name: str, defaults: dict, space: dict, fp32: bool, target: str):
    tun, spc, exprs = {}, {}, {}
    for key, default in defaults.items():
        e, t, s = tune(name, key, default, space.get(key, [default]))
        exprs[key], tun, spc = e, {**tun, **t}, {**spc, **s}
    if fp32:  # fp32 inputs: three TF32 products (fp32-level error) or exact fp32 products
        e, t, s = tune(name, "PREC", "ieee" if target == "cpu" else "tf32x3", ["ieee", "tf32x3"])
        exprs["PREC"], tun, spc = e, {**tun, **t}, {**spc, **s}
    return exprs, tun, spc


# ---- a tril / triu of the product ----------------------------------------------------------------------------
def _triangle(node) -> tuple[str, int] | None:
    """("lower", d) when the matmul's one use keeps (row, col) with col - row <= d and zeroes the rest (tril's
    decomposition: where(col - row <= d, mm, 0)); ("upper", d) for col - row >= d (triu's)."""
    users = list(node.users)
    if len(users) != 1 or ops.packet(users[0]) not in (aten.where, prims.where):
        return None
    cond, keep, other = (list(users[0].args) + [None, None, None])[:3]
    if keep is not node or not _is_zero(other) or getattr(cond, "op", None) != "call_function":
        return None
    rel = {aten.le: "lower", aten.ge: "upper"}.get(ops.packet(cond))
    if rel is None or not isinstance(cond.args[1], int) or ops.packet(cond.args[0]) is not aten.sub:
        return None
    cols, rows = cond.args[0].args[:2]
    if _arange_along(cols) != (1, shape(node)[-1]) or _arange_along(rows) != (0, shape(node)[-2]):
        return None
    return rel, int(cond.args[1])


def _is_zero(v) -> bool:
    if isinstance(v, (int, float)):
        return v == 0
    p = ops.packet(v) if getattr(v, "op", None) == "call_function" else None
    return p in (aten.scalar_tensor, aten.full) and v.args and v.args[-1 if p is aten.full else 0] == 0


def _arange_along(v) -> tuple[int, int] | None:
    """(dim, length) of a 2D broadcast of arange(0, length) along dim, or None."""
    if getattr(v, "op", None) != "call_function" or ops.packet(v) is not prims.broadcast_in_dim:
        return None
    src, out_shape, bdims = v.args[0], v.args[1], v.args[2]
    if len(out_shape) != 2 or len(bdims) != 1 or getattr(src, "op", None) != "call_function" \
            or ops.packet(src) is not aten.arange:
        return None
    a = list(src.args)
    start, step = (0, 1) if len(a) == 1 else (a[0], a[2] if len(a) > 2 else 1)
    if start != 0 or step != 1 or shape(src)[0] != out_shape[bdims[0]]:
        return None
    return bdims[0], shape(src)[0]


# ---- the matmul kernels --------------------------------------------------------------------------------------
def gemm_kernels(name: str, node, outputs: list, buffers: dict, target: str) -> list[Kernel]:
    if ops.packet(node) is aten.addmm:
        bias, a, b = node.args[0], node.args[1], node.args[2]
        beta, alpha = node.kwargs.get("beta", 1), node.kwargs.get("alpha", 1)
    else:
        bias, (a, b), beta, alpha = None, node.args[:2], 1, 1
    out = shape(node)
    batched = len(out) == 3
    m, n, k = out[-2], out[-1], shape(a)[-1]
    nb = out[0] if batched else 1
    dtype = str(a.meta["val"].dtype).removeprefix("torch.")
    if dtype not in ("float32", "bfloat16", "float16"):
        raise LoweringError(f"{node.name}: a matmul of {dtype} is not lowered (float32, bfloat16, float16 are)")
    loads = loadable(buffers, outputs)
    opa, opb = _operand(a, loads), _operand(b, loads)
    shared = [library_functions(MAINLOOP)]  # the main loop's functions, pasted once into the candidate
    fp32 = dtype == "float32"
    defaults = _matmul_defaults(m, n, k, nb, fp32, target)
    exprs, tun, space = _tunables(name, defaults, _matmul_space(defaults, fp32, target), fp32, target)
    split = defaults["SPLIT_K"] > 1
    big = max(nb * m * k, nb * k * n, nb * m * n, opa.buffer.meta.numel, opb.buffer.meta.numel) > INT32_MAX
    w = KernelWriter(loads, name)
    pa, pb = w.arg(opa.buffer), w.arg(opb.buffer)
    w.emit("pid = tl.program_id(0)")
    w.emit(f"pid_m, pid_n = _tile_coords(pid, {m}, {n}, BLOCK_M, BLOCK_N, GROUP_M)")
    w.emit(f"off_m = pid_m * BLOCK_M{'.to(tl.int64)' if big else ''}")
    w.emit(f"off_n = pid_n * BLOCK_N{'.to(tl.int64)' if big else ''}")
    sa, sb = opa.strides, opb.strides
    base_a, base_b = f"{pa} + {opa.offset}", f"{pb} + {opb.offset}"
    if batched:
        w.emit(f"bi = tl.program_id(1){'.to(tl.int64)' if big else ''}")
        base_a, base_b = f"{base_a} + bi * {sa[0]}", f"{base_b} + bi * {sb[0]}"
    w.emit(f"k_total = tl.cdiv({k}, BLOCK_K)")
    if split:
        w.emit("part = tl.program_id(1)")
        w.emit("per_part = tl.cdiv(k_total, SPLIT_K)")
        w.emit("k_first = part * per_part")
        w.emit("k_steps = tl.maximum(tl.minimum(per_part, k_total - k_first), 0)")
    else:
        w.emit("k_first = 0")
        w.emit("k_steps = k_total")
    tri = _triangle(node)
    if tri is not None:  # a tile the mask zeroes entirely needs no product
        rel, d = tri
        zero = f"off_n - (off_m + BLOCK_M - 1) > {d}" if rel == "lower" else f"(off_n + BLOCK_N - 1) - off_m < {d}"
        w.emit(f"k_steps = tl.where({zero}, 0, k_steps)")
    w.emit("acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)")
    upcast = fp32 is False and target == "cpu"
    w.emit(f"acc = _gemm_acc({base_a}, {base_b}, off_m, off_n, {m}, {n}, {k}, k_first, k_steps, {sa[-2]}, "
           f"{sa[-1]}, {sb[-2]}, {sb[-1]}, acc, EVEN_K, {fp32}, {'PREC' if fp32 else repr('ieee')}, {upcast}, "
           "BLOCK_M, BLOCK_N, BLOCK_K)")
    w.emit("mi = off_m + tl.arange(0, BLOCK_M)[:, None]")
    w.emit("ni = off_n + tl.arange(0, BLOCK_N)[None, :]")
    mask = f"(mi < {m}) & (ni < {n})"
    constexprs = ["BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "EVEN_K"] + (["PREC"] if fp32 else [])
    launch = {key: exprs[key] for key in ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "num_warps", "num_stages")}
    launch["EVEN_K"] = f"{k} % {exprs['BLOCK_K']} == 0"
    if fp32:
        launch["PREC"] = exprs["PREC"]
    tiles = f"triton.cdiv({m}, {exprs['BLOCK_M']}) * triton.cdiv({n}, {exprs['BLOCK_N']})"
    what = f"matmul {nb}x{m}x{n}x{k} ({dtype})"
    if not split:
        canon = ([Index.var("bi", nb)] if batched else []) + [Index.var("mi", m), Index.var("ni", n)]
        _epilogue(w, node, bias, alpha, beta, canon, outputs, buffers, mask)
        return [Kernel(name, finish(w, constexprs), list(w.args), f"({tiles}, {nb})", launch, tun, space, "gemm",
                       f"{what} with its epilogue -> {', '.join(o.name for o in outputs)}", helpers=shared)]
    # split K: each program stores its part's partial tile; a second kernel sums them and runs the epilogue
    parts = max(space[f"{name}_SPLIT_K"])
    ws = f"{name}_parts"
    w.args[ws] = Buffer(ws, TensorMeta((parts, m, n), "float32", (m * n, n, 1)))
    w.emit(f"tl.store({ws} + part * {m * n} + mi * {n} + ni, acc, mask={mask})")
    first = Kernel(name, finish(w, constexprs + ["SPLIT_K"]), list(w.args), f"({tiles}, {exprs['SPLIT_K']})",
                   {**launch, "SPLIT_K": exprs["SPLIT_K"]}, tun, space, "gemm",
                   f"{what}, part 1: K split over SPLIT_K programs a tile", temps=[(ws, (parts, m, n), "float32")],
                   helpers=shared)
    w2 = KernelWriter(loads, f"{name}_sum")
    w2.args[ws] = w.args[ws]
    w2.emit(f"pid_m, pid_n = _tile_coords(tl.program_id(0), {m}, {n}, BLOCK_M, BLOCK_N, GROUP_M)")
    w2.emit("mi = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)[:, None]")
    w2.emit("ni = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)[None, :]")
    w2.emit("acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)")
    w2.emit("for part in range(SPLIT_K):")
    w2.emit(f"    acc += tl.load({ws} + part * {m * n} + mi * {n} + ni, mask={mask}, other=0.0)")
    _epilogue(w2, node, bias, alpha, beta, [Index.var("mi", m), Index.var("ni", n)], outputs, buffers, mask)
    second = Kernel(w2.name, finish(w2, ["BLOCK_M", "BLOCK_N", "GROUP_M", "SPLIT_K"]), list(w2.args),
                    f"({tiles},)", {key: launch[key] for key in ("BLOCK_M", "BLOCK_N", "GROUP_M")}
                    | {"SPLIT_K": exprs["SPLIT_K"], "num_warps": "4"}, {}, {}, "gemm",
                    f"{what}, part 2: the partial tiles summed, then the epilogue -> "
                    f"{', '.join(o.name for o in outputs)}", helpers=shared)
    return [first, second]


def _epilogue(w: KernelWriter, node, bias, alpha, beta, canon: list[Index], outputs: list, buffers: dict,
              mask: str) -> None:
    """acc * alpha + beta * bias, rounded as eager stores the matmul's dtype, then every output from it."""
    w.tile_var = "(mi + ni)"
    value = "acc" if alpha == 1 else f"acc * {float(alpha)}"
    out = shape(node)
    if bias is not None:
        w.mask = mask
        bv, bc = evaluate(w, bias, w.arg_idx(bias, out, canon))
        value = f"{value} + {w.cast(bv, bc, 'f32')}" if beta == 1 else f"{value} + {float(beta)} * {bv}"
    res = w.bind(w.round_to(w.cast(value, "f32", ops.ctype_of(node.meta["val"].dtype)),
                            str(node.meta["val"].dtype).removeprefix("torch.")))
    w.homes[node] = (canon, res, ops.ctype_of(node.meta["val"].dtype))
    _store_epilogue(w, node, canon, outputs, buffers, mask)
