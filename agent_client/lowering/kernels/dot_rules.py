"""What a matmul's kernel is made of: its operands as strided views of stored buffers, the tile rule and the
search's space beside it, and the test for a tril/triu of the product.

Usage: op = operand(node, buffers); d = matmul_defaults(m, n, k, nb, fp32, "cuda"); tri = triangle(node)
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from agent_client.lowering import ops
from agent_client.lowering.errors import FusionError
from agent_client.lowering.kernels.common import pow2, tune
from agent_client.lowering.writer import Buffer, shape

aten, prims = torch.ops.aten, torch.ops.prims
SMS = 132  # streaming multiprocessors of the card the defaults are chosen for (an H100); the search moves them


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


def operand(node, buffers: dict) -> Operand:
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
def matmul_defaults(m: int, n: int, k: int, nb: int, fp32: bool, target: str) -> dict:
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
    while not long_k and tiles() < SMS and bn > 64 and bn >= bm:  # too few tiles to fill the card: narrower
        bn //= 2
    while not long_k and tiles() < SMS and bm > 64:
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
    while nb == 1 and tiles * split * 2 <= 2 * SMS and steps // (split * 2) >= 16:
        split *= 2
    return split


def matmul_space(defaults: dict, fp32: bool, target: str) -> dict:
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


def gemm_tunables(name: str, defaults: dict, space: dict, fp32: bool, target: str):
    tun, spc, exprs = {}, {}, {}
    for key, default in defaults.items():
        e, t, s = tune(name, key, default, space.get(key, [default]))
        exprs[key], tun, spc = e, {**tun, **t}, {**spc, **s}
    if fp32:  # fp32 inputs: three TF32 products (fp32-level error) or exact fp32 products
        e, t, s = tune(name, "PREC", "ieee" if target == "cpu" else "tf32x3", ["ieee", "tf32x3"])
        exprs["PREC"], tun, spc = e, {**tun, **t}, {**spc, **s}
    return exprs, tun, spc


# ---- a tril / triu of the product ----------------------------------------------------------------------------
def triangle(node) -> tuple[str, int] | None:
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


# ---- optional forms of the main loop ------------------------------------------------------------------------
KMAJOR_MIN_PRODUCTS = 256  # products each element of a K-major copy must feed for the copy to pay (kmajor_pays)


def kmajor_offered(op: Operand, fp32: bool, k_dim: int) -> bool:
    """A_KMAJOR / B_KMAJOR: an fp32 operand stored with K not contiguous (torch.matmul(A, B)'s B, A.T's A, a
    batched B of torch.bmm) may be copied K-major first, each batch's matrix as a 2-D operand's. Hopper's TF32
    MMA takes its operands K-major from shared memory; Triton's tf32x3 splits them in registers, and in the PTX
    it compiles for sm_90 an N-major B reaches shared memory through scalar stores and an M-major A leaves it
    through scalar loads, where K-major ones use stmatrix and ldmatrix. On an H100 KernelBench's 4096^3 matmul
    (B N-major) ran in 1.674 ms with the copy, 3.851 ms through the library's kernel on B as stored
    (corpus/kernels/gemm_epilogue/NOTES.md). k_dim: which of the operand's last two dims is K (-1 for A, -2
    for B)."""
    return fp32 and op.strides[k_dim] != 1


def kmajor_batches(op: Operand, nb: int, batched: bool) -> int:
    """Matrices a K-major copy of the operand holds: one a batch, or one for all where the operand is the same
    matrix in every batch (batch stride 0, an expanded weight)."""
    return nb if batched and nb > 1 and op.strides[0] != 0 else 1


def kmajor_pays(products_per_element: int) -> bool:
    """Whether an operand's K-major copy is on by default, from the products each copied element feeds (M for
    B, N for A, times the batches an operand shared by all of them serves). The copy reads and writes each
    element once (8 bytes of fp32); the product then reads the copy instead. On an H100 (KernelBench 1/1,
    benchmarks/results/kernelbench-h100-20261207T152746Z.json) the copy and the K-major loop ran at 82 TFLOP/s,
    the library's loop on the N-major B at 36 (1/3's batched loop without a copy at 37): an element's 256
    products take ~6.2 ps against ~14, and its copy ~2.7 ps at 3 TB/s. The break-even is near 90 products an
    element; 256 leaves room for a copy slower than a plain one (it transposes). KernelBench 1/3 (128 x
    512x1024 @ 1024x2048, 512 products an element of B): B is 1 GiB, a copy of ~0.7 ms against ~3.4 ms of
    products at 82 TFLOP/s."""
    return products_per_element >= KMAJOR_MIN_PRODUCTS


def tma_form(opa: Operand, opb: Operand, nb: int, fp32: bool, split: bool) -> str | None:
    """PERSISTENT: 16-bit operands fed by TMA descriptors to a persistent kernel (the library's form for
    bf16/fp16): "nk" with B's transpose (N, K) K-contiguous (a linear layer's weight), "kn" with B (K, N)
    N-contiguous; None where TMA cannot read them (a unit last stride, 16-byte aligned rows and start)."""
    if fp32 or nb != 1 or split or opa.strides[-1] != 1:
        return None
    size = 2  # bytes of a 16-bit element

    def aligned(*values: int) -> bool:
        return all((v * size) % 16 == 0 for v in values)

    if not aligned(opa.strides[-2], opa.offset, opb.offset):
        return None
    if opb.strides[-2] == 1 and aligned(opb.strides[-1]):
        return "nk"
    if opb.strides[-1] == 1 and aligned(opb.strides[-2]):
        return "kn"
    return None
