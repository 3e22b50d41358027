"""Cumulative sum along one dimension (moved last when it is not last).

Each program owns ROWS rows and walks them in BLOCK-wide chunks: an in-register scan of the chunk
(tl.cumsum) plus the running total of the chunks before it. Bytes moved: one read of x, one write of y;
narrow rows share a program so each step still moves a few thousand elements.

Accuracy: a prefix sum of n fp32 values carries rounding error that grows with n, and near the zeros of
the running sum an elementwise relative check sees all of it. With FP64_ACC (fp32 inputs) the scan
and the carry run in fp64 (the H200's fp64 rate is far above what this memory-bound scan needs), so
the result is the exactly rounded prefix sum; 16-bit inputs accumulate in fp32. FP64_ACC = 2 keeps the
fp64-grade carry without fp64 arithmetic per element (two conversions per element run at the fp64
units' rate): each chunk is scanned in fp32 (its error is that of a few-thousand-element sum, ~1e-5 on
unit normals) and the running total is a compensated fp32 pair (hi, lo) updated by an exact two-sum per
chunk, so the long carry chain adds no error; each output is hi + (chunk prefix + lo), one rounding.
"""

import torch
import triton
import triton.language as tl
from torch import nn

TUNABLES = {
    "BLOCK": 1024,  # widest chunk scanned in registers
    "TILE": 1024,  # ROWS * BLOCK for narrow rows
    "num_warps": 4,
    "FP64_ACC": 2,  # 1: fp32 inputs scan in fp64; 0: in fp32; 2: fp32 chunks, compensated fp32 carry
}


@triton.jit
def _cumsum_kernel(
    x_ptr, y_ptr, n_rows, n_cols, stride_x, stride_y,
    ROWS: tl.constexpr, BLOCK: tl.constexpr, FP64: tl.constexpr, COMP: tl.constexpr,
):
    rows = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK)
    row_mask = rows < n_rows
    acc_dtype: tl.constexpr = tl.float64 if FP64 else tl.float32
    carry = tl.zeros([ROWS], acc_dtype)  # running total of the chunks before this one
    if COMP:
        _cumsum_rows_comp(x_ptr, y_ptr, rows, row_mask, n_cols, stride_x, stride_y, ROWS, BLOCK)
    else:
        for start in range(0, n_cols, BLOCK):
            c = start + cols
            mask = row_mask[:, None] & (c < n_cols)[None, :]
            x = tl.load(x_ptr + rows[:, None] * stride_x + c[None, :], mask=mask, other=0.0).to(acc_dtype)
            y = tl.cumsum(x, axis=1) + carry[:, None]
            tl.store(y_ptr + rows[:, None] * stride_y + c[None, :], y.to(y_ptr.dtype.element_ty), mask=mask)
            # the next chunk starts from this chunk's last lane (masked lanes add 0, so it holds the total);
            # taken from y rather than as carry + sum(x), a form Triton 3.6's thread-locality pass rejects
            carry = tl.sum(tl.where((cols == BLOCK - 1)[None, :], y, 0.0), axis=1)


@triton.jit
def _cumsum_rows_comp(x_ptr, y_ptr, rows, row_mask, n_cols, stride_x, stride_y,
                      ROWS: tl.constexpr, BLOCK: tl.constexpr):
    """fp32 chunk scans; the carry is hi + lo, kept exact by a two-sum per chunk (FP64_ACC = 2)."""
    cols = tl.arange(0, BLOCK)
    hi = tl.zeros([ROWS], tl.float32)
    lo = tl.zeros([ROWS], tl.float32)
    for start in range(0, n_cols, BLOCK):
        c = start + cols
        mask = row_mask[:, None] & (c < n_cols)[None, :]
        x = tl.load(x_ptr + rows[:, None] * stride_x + c[None, :], mask=mask, other=0.0).to(tl.float32)
        s = tl.cumsum(x, axis=1)
        y = hi[:, None] + (s + lo[:, None])
        tl.store(y_ptr + rows[:, None] * stride_y + c[None, :], y.to(y_ptr.dtype.element_ty), mask=mask)
        # the chunk's total is its last lane (masked lanes add 0); picked with a max, not a sum: a sum
        # added to a loop-carried value is the pattern Triton 3.6's thread-locality pass rejects
        t = tl.max(tl.where((cols == BLOCK - 1)[None, :], s, float("-inf")), axis=1)
        total = hi + t  # two-sum: total + err == hi + t exactly
        b = total - hi
        err = (hi - (total - b)) + (t - b)
        lo = lo + err
        hi = total


def cumsum(x: torch.Tensor, dim: int) -> torch.Tensor:
    if x.dim() == 0:
        raise ValueError("cumsum needs at least one dimension")
    dim = dim % x.dim()
    moved = dim != x.dim() - 1
    xm = x.movedim(dim, -1).contiguous() if moved else x.contiguous()  # slow path: one extra copy
    n_cols = xm.shape[-1]
    x2 = xm.reshape(-1, n_cols)
    n_rows = x2.shape[0]
    y = torch.empty_like(x2)
    t = TUNABLES
    block = min(t["BLOCK"], triton.next_power_of_2(n_cols))
    rows = max(1, min(t["TILE"] // block, triton.next_power_of_2(n_rows)))
    comp = t["FP64_ACC"] == 2 and x.dtype != torch.float64
    fp64 = t["FP64_ACC"] == 1 and x.dtype in (torch.float32, torch.float64)
    _cumsum_kernel[(triton.cdiv(n_rows, rows),)](
        x2, y, n_rows, n_cols, x2.stride(0), y.stride(0), ROWS=rows, BLOCK=block, FP64=fp64,
        COMP=comp, num_warps=t["num_warps"],
    )
    y = y.reshape(xm.shape)
    return y.movedim(-1, dim) if moved else y


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return cumsum(x, self.dim)
