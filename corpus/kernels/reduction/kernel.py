"""Reduction over one dimension: sum, mean, max, min, argmax, argmin (first index on ties, like torch).

The input is viewed as (outer, R, inner) with R the reduced dimension; the output is (outer, inner).
- inner == 1 (reducing the last dimension): each program owns ROWS rows and walks R in BLOCK_R steps,
  keeping a [ROWS, BLOCK_R] accumulator (elementwise, no cross-lane work inside the loop), then
  reduces it once.
- inner > 1 (a middle dimension): each program owns BLOCK_I contiguous output columns of one outer
  index and walks R in BLOCK_R steps; every load is a [BLOCK_R, BLOCK_I] tile of contiguous runs.
min/argmin run as max/argmax of -x (exact). Accumulation is fp32; bytes moved ~ one read of x.
"""

import torch
import triton
import triton.language as tl
from torch import nn

TUNABLES = {
    "BLOCK_R_ROW": 512,  # last-dim path: reduced elements per step
    "ROW_TILE": 4096,  # last-dim path: ROWS * BLOCK_R, elements per step
    "num_warps_row": 8,
    "BLOCK_R_COL": 16,  # middle-dim path: reduced rows per step for 4-byte data (x2 for 2-byte: same bytes)
    "BLOCK_I": 64,  # middle-dim path: output columns per program (shrunk while the grid is small)
    "num_warps_col": 4,
    "MIN_PROGRAMS": 1024,  # middle-dim path: shrink BLOCK_I (down to 32) until the grid has this many
    "EVICT_COL": "",  # middle-dim path: load eviction policy ("" or "evict_first": x is read once)
}
_OPS = {"sum": 0, "mean": 1, "max": 2, "min": 3, "argmax": 4, "argmin": 5}
_NEG = tl.constexpr(float("-inf"))
_BIG = tl.constexpr(2**31 - 1)  # positions are int32 in registers (R < 2**31)


@triton.jit
def _finish(acc, idx, n_red, OP: tl.constexpr, AXIS: tl.constexpr):
    """Reduce the accumulator along AXIS into (value, index) for op OP."""
    if OP <= 1:
        v = tl.sum(acc, axis=AXIS)
        if OP == 1:
            v = v / n_red
        i = tl.zeros_like(v).to(tl.int32)
    else:
        v = tl.max(acc, axis=AXIS)
        if AXIS == 0:
            i = tl.min(tl.where(acc == v[None, :], idx, _BIG), axis=AXIS)
        else:
            i = tl.min(tl.where(acc == v[:, None], idx, _BIG), axis=AXIS)
        if OP == 3:
            v = -v
    return v, i


@triton.jit
def _step(acc, idx, x, r, OP: tl.constexpr):
    """Fold one tile x (reduced positions r) into the elementwise accumulator."""
    if OP <= 1:
        acc = acc + x
    else:
        if OP == 3 or OP == 5:
            x = -x
        better = x > acc  # strict: the earliest position keeps ties
        acc = tl.where(better, x, acc)
        idx = tl.where(better, r, idx)
    return acc, idx


@triton.jit
def _reduce_last_kernel(
    x_ptr, out_ptr, n_rows, n_red, stride_row,
    OP: tl.constexpr, ROWS: tl.constexpr, BLOCK_R: tl.constexpr,
):
    rows = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK_R)
    row_mask = rows < n_rows
    other = 0.0 if OP <= 1 else _NEG
    acc = tl.full([ROWS, BLOCK_R], other, tl.float32)
    idx = tl.zeros([ROWS, BLOCK_R], tl.int32)
    for start in range(0, n_red, BLOCK_R):
        r = start + cols
        mask = row_mask[:, None] & (r < n_red)[None, :]
        x = tl.load(x_ptr + rows[:, None] * stride_row + r[None, :], mask=mask, other=0.0).to(tl.float32)
        if OP >= 2:
            x = tl.where(mask, x, _NEG if OP == 2 or OP == 4 else -_NEG)
        acc, idx = _step(acc, idx, x, r[None, :] + tl.zeros([ROWS, BLOCK_R], tl.int32), OP)
    v, i = _finish(acc, idx, n_red, OP, 1)
    if OP >= 4:
        tl.store(out_ptr + rows, i.to(tl.int64), mask=row_mask)
    else:
        tl.store(out_ptr + rows, v.to(out_ptr.dtype.element_ty), mask=row_mask)


@triton.jit
def _reduce_mid_kernel(
    x_ptr, out_ptr, n_red, n_inner, stride_outer, stride_red,
    OP: tl.constexpr, BLOCK_R: tl.constexpr, BLOCK_I: tl.constexpr, EVICT: tl.constexpr,
):
    o = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK_I + tl.arange(0, BLOCK_I)
    col_mask = cols < n_inner
    rr = tl.arange(0, BLOCK_R)
    other = 0.0 if OP <= 1 else _NEG
    acc = tl.full([BLOCK_R, BLOCK_I], other, tl.float32)
    idx = tl.zeros([BLOCK_R, BLOCK_I], tl.int32)
    base = x_ptr + o * stride_outer
    for start in range(0, n_red, BLOCK_R):
        r = start + rr
        mask = (r < n_red)[:, None] & col_mask[None, :]
        x = tl.load(base + r[:, None].to(tl.int64) * stride_red + cols[None, :], mask=mask, other=0.0,
                    eviction_policy=EVICT)
        x = x.to(tl.float32)
        if OP >= 2:
            x = tl.where(mask, x, _NEG if OP == 2 or OP == 4 else -_NEG)
        acc, idx = _step(acc, idx, x, r[:, None] + tl.zeros([BLOCK_R, BLOCK_I], tl.int32), OP)
    v, i = _finish(acc, idx, n_red, OP, 0)
    out = out_ptr + o * n_inner + cols
    if OP >= 4:
        tl.store(out, i.to(tl.int64), mask=col_mask)
    else:
        tl.store(out, v.to(out_ptr.dtype.element_ty), mask=col_mask)


def reduce_dim(x: torch.Tensor, op: str, dim: int) -> torch.Tensor:
    if op not in _OPS:
        raise ValueError(f"reduction op {op!r} is unknown; known: {sorted(_OPS)}")
    dim = dim % x.dim()
    x = x.contiguous()
    shape = list(x.shape)
    n_red = shape[dim]
    outer = 1
    for s in shape[:dim]:
        outer *= s
    inner = x.numel() // (outer * n_red)
    out_shape = shape[:dim] + shape[dim + 1:]
    out_dtype = torch.int64 if op in ("argmax", "argmin") else x.dtype
    out = torch.empty(out_shape, dtype=out_dtype, device=x.device)
    t, code = TUNABLES, _OPS[op]
    if inner == 1:
        block_r = min(t["BLOCK_R_ROW"], triton.next_power_of_2(n_red))
        rows = max(1, t["ROW_TILE"] // block_r)
        rows = min(rows, triton.next_power_of_2(outer))
        _reduce_last_kernel[(triton.cdiv(outer, rows),)](
            x, out, outer, n_red, n_red, OP=code, ROWS=rows, BLOCK_R=block_r, num_warps=t["num_warps_row"],
        )
    else:
        block_i = min(t["BLOCK_I"], triton.next_power_of_2(inner))
        while block_i > 32 and outer * triton.cdiv(inner, block_i) < t["MIN_PROGRAMS"]:
            block_i //= 2
        block_r = min(t["BLOCK_R_COL"] * max(1, 4 // x.element_size()), triton.next_power_of_2(n_red))
        _reduce_mid_kernel[(outer, triton.cdiv(inner, block_i))](
            x, out, n_red, inner, n_red * inner, inner,
            OP=code, BLOCK_R=block_r, BLOCK_I=block_i, EVICT=t["EVICT_COL"], num_warps=t["num_warps_col"],
        )
    return out


class ModelNew(nn.Module):
    def __init__(self, op: str, dim: int):
        super().__init__()
        self.op, self.dim = op, dim

    def forward(self, x):
        return reduce_dim(x, self.op, self.dim)
