"""Scatter kernels: index_put, index_add, scatter, scatter_add, scatter_reduce's amax and amin (a copy, then
stores or atomic adds, maxima or minima).

Usage: kernels = scatter_kernels("k4", node, buffers, "cuda")
"""

from __future__ import annotations

import math

from agent_client.lowering import ops
from agent_client.lowering.index import Index, address, delinearize
from agent_client.lowering.kernels.common import (
    Kernel,
    evaluate,
    finish,
    index_type,
    loadable,
    pow2,
)
from agent_client.lowering.kernels.pointwise import pointwise_kernel  # noqa: F401
from agent_client.lowering.writer import KernelWriter, LoweringError, shape, tile_shaped


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
    w = KernelWriter(loadable(buffers, [node]), f"{name}_copy")
    w.emit("xi = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)")
    index_type(w, numel, "xi")
    w.emit(f"xmask = xi < {numel}")
    w.mask = "xmask"
    idx = delinearize(Index.var("xi", numel), out_shape)
    code, c = evaluate(w, dst_node, idx, node)
    if masked:
        mask_node, fill = node.args[1][0], node.args[2]
        m, mc = evaluate(w, mask_node, idx[:len(shape(mask_node))], node)
        f, fc = evaluate(w, fill, [Index.of(0)] * len(shape(fill)), node)
        ctype = ops.ctype_of(node.meta["val"].dtype)
        code = w.bind(f"tl.where({w.cast(m, mc, 'i1')}, {w.cast(f, fc, ctype)}, {w.cast(code, c, ctype)})")
    w.store(out, idx, code, "xmask")
    xb = min(pow2(numel), 1 << 16 if target == "cpu" else 1024)
    copy = Kernel(w.name, finish(w, ["XBLOCK"]), list(w.args), f"(triton.cdiv({numel}, {xb}),)",
                  {"XBLOCK": str(xb), "num_warps": "4"}, {}, {}, "scatter", f"copy of {dst_node.name} into {node.name}")
    if masked:
        return [copy]
    # part 2: one lane per written element
    if p is ops.aten.index_put:
        indices, values = list(node.args[1]), node.args[2]
        accumulate = bool(node.args[3] if len(node.args) > 3 else node.kwargs.get("accumulate", False))
        present = [k for k, t in enumerate(indices) if t is not None]
        b_shape = tuple(torch_broadcast([shape(indices[k]) for k in present]))
        # PyTorch's rule: indices on adjacent dims put their broadcast shape where those dims were;
        # indices apart put it first. The other dims keep their order.
        rest = [d for d in range(len(out_shape)) if d not in present]
        first = present[0] if present == list(range(present[0], present[-1] + 1)) else 0
        before = [d for d in rest if d < first]
        src_shape = tuple(out_shape[d] for d in before) + b_shape + tuple(
            out_shape[d] for d in rest if d not in before)
    else:
        dim = node.args[1] % len(out_shape)
        index = node.args[2]
        values = node.args[3] if len(node.args) > 3 else node.kwargs.get("src", node.kwargs.get("value"))
        accumulate = p is ops.aten.scatter_add
        src_shape = shape(index)
    extreme = _extreme(node) if p is ops.aten.scatter_reduce else None
    n = math.prod(src_shape)
    w = KernelWriter(loadable(buffers, [node]), f"{name}_write")
    w.emit("xi = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)")
    index_type(w, n, "xi")
    w.emit(f"xmask = xi < {n}")
    w.mask = "xmask"
    sidx = delinearize(Index.var("xi", n), src_shape)
    if p is ops.aten.index_put:
        at_b = sidx[len(before):len(before) + len(b_shape)]
        others = sidx[:len(before)] + sidx[len(before) + len(b_shape):]
        target_idx = [None] * len(out_shape)
        for d, i in zip(before + [d for d in rest if d not in before], others):
            target_idx[d] = i
        for k in present:
            v, c = evaluate(w, indices[k], w.arg_idx(indices[k], b_shape, at_b), node)
            v = w.bind(w.cast(v, c, "i64"))
            target_idx[k] = Index.opaque(w.bind(f"tl.where({v} < 0, {v} + {out_shape[k]}, {v})"))
    else:
        v, c = evaluate(w, index, sidx, node)
        v = w.bind(w.cast(v, c, "i64"))
        target_idx = list(sidx)
        target_idx[dim] = Index.opaque(w.bind(f"tl.where({v} < 0, {v} + {out_shape[dim]}, {v})"))
    if isinstance(values, type(node)):
        val, vc = evaluate(w, values, w.arg_idx(values, src_shape, sidx), node)
    else:
        val, vc = ops.code(w, values, "f32"), "f32"
    val = w.bind(tile_shaped(w.cast(val, vc, ops.ctype_of(node.meta["val"].dtype)), "xi"))
    ptr = w.arg(out)
    off = address(target_idx, out.meta.stride).render()
    if extreme:
        w.emit(f"tl.atomic_{extreme}({ptr} + ({off}), {val}.to({ptr}.dtype.element_ty), mask=xmask)")
    elif accumulate:
        w.emit(f"tl.atomic_add({ptr} + ({off}), {val}.to({ptr}.dtype.element_ty), mask=xmask)")
    else:
        w.emit(f"tl.store({ptr} + ({off}), {val}.to({ptr}.dtype.element_ty), mask=xmask)")
    xb2 = min(pow2(n), 1 << 16 if target == "cpu" else 1024)
    write = Kernel(w.name, finish(w, ["XBLOCK"]), list(w.args), f"(triton.cdiv({n}, {xb2}),)",
                   {"XBLOCK": str(xb2), "num_warps": "4"}, {}, {}, "scatter",
                   f"{f'atomic {extreme}' if extreme else 'atomic adds' if accumulate else 'stores'} of {n} "
                   f"elements into {node.name}")
    return [copy, write]


def _extreme(node) -> str:
    """"max" or "min" for scatter_reduce's amax / amin over the tensor's own values (the decomposition leaves
    only these: sums and means become scatter_add, and include_self=False a plain scatter of the values first);
    else a named decline."""
    reduce = node.args[4] if len(node.args) > 4 else node.kwargs.get("reduce")
    include_self = node.args[5] if len(node.args) > 5 else node.kwargs.get("include_self", True)
    dtype = str(node.meta["val"].dtype).removeprefix("torch.")
    if reduce not in ("amax", "amin") or not include_self:
        raise LoweringError(f"{node.name}: scatter_reduce {reduce!r} (include_self={include_self}) is not lowered")
    if dtype not in ("float32", "int32", "int64"):
        raise LoweringError(f"{node.name}: scatter_reduce {reduce!r} in {dtype} is not lowered (atomic maxima and "
                            "minima: float32, int32, int64)")
    return reduce[1:]


def torch_bool():
    import torch

    return torch.bool


def torch_broadcast(shapes: list[tuple]) -> tuple:
    import torch

    return tuple(torch.broadcast_shapes(*shapes))
