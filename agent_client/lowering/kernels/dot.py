"""Matmul kernels: tl.dot tiles with fused prologues and epilogues.

Usage: k = gemm_kernel("k5", node, outputs, buffers, "cuda")
"""

from __future__ import annotations

from agent_client.lowering import ops
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
