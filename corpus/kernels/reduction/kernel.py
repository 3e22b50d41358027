"""Reduction over one dimension: sum, mean, max, min, argmax, argmin (first index on ties, like torch).

The input is viewed as (outer, R, inner) with R the reduced dimension; the output is (outer, inner).
- inner == 1 (reducing the last dimension): each program owns ROWS rows and walks R in BLOCK_R steps,
  keeping a [ROWS, BLOCK_R] accumulator (elementwise, no cross-lane work inside the loop), then
  reduces it once.
- inner > 1 (a middle dimension): each program owns BLOCK_I contiguous output columns of one outer
  index and walks R in BLOCK_R steps; every load is a [BLOCK_R, BLOCK_I] tile of contiguous runs.
min/argmin run as max/argmax of -x (exact). Accumulation is fp32; bytes moved ~ one read of x.

Options (TUNABLES; COL_STRATEGY "auto" picks "vec" where the inner length is not a multiple of 16 values, so
Triton cannot prove the rows 16-byte aligned; the rest are off by default):
- ALIGN_ROW (last-dim path): rows whose length leaves them misaligned (4099 fp32) are walked in blocks
  from the 16-byte boundary at or before each row's start: the first block and the tail are masked, the
  blocks between load unmasked 128-bit vectors.
- COL_STRATEGY "vec" (middle-dim path): the inner length and the reduced stride enter as VEC * n (VEC the
  widest 16-byte-or-less vector dividing inner), so Triton can prove 16-byte alignment (inner = 1000 fp32
  is not a multiple of 16 elements, which is all it checks by itself); whole BLOCK_R tiles skip the R mask;
  SPLIT_R > 1 splits R across programs that write fp32 partials, which a second small kernel combines
  in split order (first index on ties kept).
- STAGES: loads of this many loop steps in flight (tl.range num_stages) in the two options' loops.
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
    "ALIGN_ROW": False,  # last-dim path: unmasked 16-byte-aligned blocks on misaligned rows
    # middle-dim path: "tile", "vec" (provably aligned vectors, optional R split), or "auto": "vec" where the
    # inner length is not a multiple of 16 values, else "tile". Triton proves an integer argument's divisibility
    # by 16 only, so the "tile" path's row stride of 1000 (4000-byte fp32 rows, every one 16-byte aligned) still
    # gives scalar loads: 64x2048x1000 fp32 sum "tile" 0.1421-0.1423 ms, "vec" 0.1338-0.1344 (harness,
    # benchmarks/results/library-h200-ab-*-20261201T105*.json in commit ab220786f). The rule used to be
    # "rows not whole 16-byte vectors", which sent that spec to "tile".
    "COL_STRATEGY": "auto",
    "VEC_BLOCK_I": 256,  # "vec": output columns per program (shrunk while the grid is small)
    "VEC_BLOCK_R_COL": 8,  # "vec": reduced rows per step for 4-byte data (x2 for 2-byte)
    # "vec": programs sharing one output tile's R range (partials combined by a second kernel); 1: one kernel,
    # narrower column tiles (MIN_PROGRAMS): 0.1338/0.1344 ms against 0.1355/0.1355 with 4 (same files)
    "SPLIT_R": 1,
    "STAGES": 1,  # ALIGN_ROW / "vec": loop steps whose loads are in flight at once (tl.range num_stages)
    # middle-dim paths: launch order. False: the outer index varies fastest, so the programs in flight at once
    # read the same column tile of many (outer) slabs: short runs (bf16 max: 128 bytes) at one offset of every
    # row. True: the column tiles (and R splits) of one slab run side by side, covering whole rows at once (one
    # grid axis, decoded in the kernel).
    # Harness, H200: bf16 max 0.1446/0.1450 -> 0.1411/0.1417 ms
    # (library-h200-ab{A,B}{1,2}-20261201T104*.json in commit ab220786f),
    # 0.1407/0.1408 -> 0.1393/0.1394 and the fp32 "vec" sum 0.1359/0.1360 -> 0.1343/0.1343 on another box
    # (library-h200-ab-{outerfirst,colsfirst}-{1,2}-20261201T110*.json in commit ab220786f)
    "COLS_FIRST": True,
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
    x_ptr, out_ptr, n_red, n_inner, stride_outer, stride_red, n_cols,
    OP: tl.constexpr, BLOCK_R: tl.constexpr, BLOCK_I: tl.constexpr, EVICT: tl.constexpr,
    COLS_FIRST: tl.constexpr,
):
    """Grid (outer, column tiles), or with COLS_FIRST one axis of column tiles x outer, column tile fastest (the y
    and z axes stop at 65535 programs, which outer may pass)."""
    if COLS_FIRST:
        pid = tl.program_id(0)
        o = (pid // n_cols).to(tl.int64)
        cols = (pid % n_cols) * BLOCK_I + tl.arange(0, BLOCK_I)
    else:
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


@triton.jit
def _reduce_last_aligned_kernel(
    x_ptr, out_ptr, n_rows, n_red,
    OP: tl.constexpr, ROWS: tl.constexpr, BLOCK_R: tl.constexpr, VEC: tl.constexpr, STAGES: tl.constexpr,
):
    """Contiguous rows of n_red. Block k of a row covers positions col0 + k * BLOCK_R + [0, BLOCK_R), with
    col0 in (-VEC, 0] putting block starts on 16-byte boundaries; blocks 1 .. n_red // BLOCK_R - 1 lie
    inside every row and load unmasked. Blocks run in position order: strict > keeps the first index."""
    rows = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    row_mask = rows < n_rows
    row_start = tl.minimum(rows, n_rows - 1) * n_red  # rows past the end re-read the last row, stored nowhere
    base = row_start // VEC * VEC
    col0 = (base - row_start).to(tl.int32)
    cols = tl.arange(0, BLOCK_R)
    fill = 0.0 if OP <= 1 else (_NEG if OP == 2 or OP == 4 else -_NEG)  # masked loads: min ops negate x
    acc = tl.full([ROWS, BLOCK_R], 0.0 if OP <= 1 else _NEG, tl.float32)
    idx = tl.zeros([ROWS, BLOCK_R], tl.int32)
    n_inside = tl.maximum(n_red // BLOCK_R, 1)
    n_blocks = (n_red + VEC - 2) // BLOCK_R + 1
    # block 0 (masked), the inside blocks, the tail blocks (masked)
    r = col0[:, None] + cols[None, :]
    x = tl.load(x_ptr + base[:, None] + cols[None, :], mask=(r >= 0) & (r < n_red), other=fill)
    acc, idx = _step(acc, idx, x.to(tl.float32), r, OP)
    for k in tl.range(1, n_inside, num_stages=STAGES):
        xk = tl.load(x_ptr + base[:, None] + k * BLOCK_R + cols[None, :])
        acc, idx = _step(acc, idx, xk.to(tl.float32), r + k * BLOCK_R, OP)
    for k in range(n_inside, n_blocks):
        rk = r + k * BLOCK_R
        xk = tl.load(x_ptr + base[:, None] + k * BLOCK_R + cols[None, :], mask=rk < n_red, other=fill)
        acc, idx = _step(acc, idx, xk.to(tl.float32), rk, OP)
    v, i = _finish(acc, idx, n_red, OP, 1)
    if OP >= 4:
        tl.store(out_ptr + rows, i.to(tl.int64), mask=row_mask)
    else:
        tl.store(out_ptr + rows, v.to(out_ptr.dtype.element_ty), mask=row_mask)


@triton.jit
def _reduce_mid_vec_kernel(
    x_ptr, out_ptr, part_v_ptr, part_i_ptr, n_outer, n_red, n_inner_vecs, r_chunk, n_cols,
    OP: tl.constexpr, BLOCK_R: tl.constexpr, BLOCK_I: tl.constexpr, VEC: tl.constexpr, SPLIT: tl.constexpr,
    STAGES: tl.constexpr, EVICT: tl.constexpr, COLS_FIRST: tl.constexpr,
):
    """Program (o, column tile, split s) reduces rows [s * r_chunk, (s + 1) * r_chunk) of its tile; with
    SPLIT == 1 it writes the result, else its raw (sum, or max of the possibly negated x, and index).
    Grid (outer, column tiles, splits), or with COLS_FIRST one axis of column tiles x splits x outer, column tile
    fastest (the y and z axes stop at 65535 programs, which outer may pass)."""
    n_inner = n_inner_vecs * VEC  # a visible multiple of VEC: strides and the column mask stay vector-wide
    if COLS_FIRST:
        pid = tl.program_id(0)
        rest = pid // n_cols
        o = (rest // SPLIT).to(tl.int64)
        cols = (pid % n_cols) * BLOCK_I + tl.arange(0, BLOCK_I)
        split = rest % SPLIT
    else:
        o = tl.program_id(0).to(tl.int64)
        cols = tl.program_id(1) * BLOCK_I + tl.arange(0, BLOCK_I)
        split = tl.program_id(2)
    col_mask = cols < n_inner
    r_lo = split * r_chunk
    r_hi = tl.minimum(r_lo + r_chunk, n_red)
    rr = tl.arange(0, BLOCK_R)
    fill = 0.0 if OP <= 1 else (_NEG if OP == 2 or OP == 4 else -_NEG)  # masked loads: min ops negate x
    acc = tl.full([BLOCK_R, BLOCK_I], 0.0 if OP <= 1 else _NEG, tl.float32)
    idx = tl.zeros([BLOCK_R, BLOCK_I], tl.int32)
    base = x_ptr + o * n_red * n_inner + cols[None, :]
    n_whole = (r_hi - r_lo) // BLOCK_R
    for k in tl.range(0, n_whole, num_stages=STAGES):
        rk = r_lo + k * BLOCK_R + rr
        xk = tl.load(base + rk[:, None].to(tl.int64) * n_inner, mask=col_mask[None, :], other=fill,
                     eviction_policy=EVICT)
        acc, idx = _step(acc, idx, xk.to(tl.float32), rk[:, None] + tl.zeros([BLOCK_R, BLOCK_I], tl.int32), OP)
    r = r_lo + n_whole * BLOCK_R + rr
    mask = (r < r_hi)[:, None] & col_mask[None, :]
    x = tl.load(base + r[:, None].to(tl.int64) * n_inner, mask=mask, other=fill, eviction_policy=EVICT)
    acc, idx = _step(acc, idx, x.to(tl.float32), r[:, None] + tl.zeros([BLOCK_R, BLOCK_I], tl.int32), OP)
    if SPLIT == 1:
        v, i = _finish(acc, idx, n_red, OP, 0)
        out = out_ptr + o * n_inner + cols
        if OP >= 4:
            tl.store(out, i.to(tl.int64), mask=col_mask)
        else:
            tl.store(out, v.to(out_ptr.dtype.element_ty), mask=col_mask)
    else:
        v, i = _finish(acc, idx, n_red, 0 if OP <= 1 else 2, 0)
        part = (split * n_outer + o) * n_inner + cols
        tl.store(part_v_ptr + part, v, mask=col_mask)
        tl.store(part_i_ptr + part, i, mask=col_mask)


@triton.jit
def _reduce_combine_kernel(part_v_ptr, part_i_ptr, out_ptr, n_out, n_red, OP: tl.constexpr, SPLIT: tl.constexpr,
                           BLOCK: tl.constexpr):
    """Fold the SPLIT raw partials of each output in split order (strict >: the earlier split wins ties)."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_out
    acc = tl.load(part_v_ptr + offs, mask=mask, other=0.0)
    idx = tl.load(part_i_ptr + offs, mask=mask, other=0)
    for s in range(1, SPLIT):
        v = tl.load(part_v_ptr + s * n_out + offs, mask=mask, other=0.0)
        if OP <= 1:
            acc += v
        else:
            better = v > acc
            acc = tl.where(better, v, acc)
            idx = tl.where(better, tl.load(part_i_ptr + s * n_out + offs, mask=mask, other=0), idx)
    if OP == 1:
        acc = acc / n_red
    if OP == 3:
        acc = -acc
    if OP >= 4:
        tl.store(out_ptr + offs, idx.to(tl.int64), mask=mask)
    else:
        tl.store(out_ptr + offs, acc.to(out_ptr.dtype.element_ty), mask=mask)


def _reduce_mid_vec(x: torch.Tensor, out: torch.Tensor, code: int, outer: int, n_red: int, inner: int):
    """The "vec" middle-dim path: tile sizes as the "tile" path, R split into SPLIT_R chunks of whole tiles."""
    t = TUNABLES
    vec = 16 // x.element_size()
    while inner % vec:
        vec //= 2
    block_r = min(t["VEC_BLOCK_R_COL"] * max(1, 4 // x.element_size()), triton.next_power_of_2(n_red))
    r_tiles = triton.cdiv(n_red, block_r)
    split = min(t["SPLIT_R"], r_tiles)
    r_chunk = triton.cdiv(r_tiles, split) * block_r
    split = triton.cdiv(n_red, r_chunk)  # no empty chunk
    block_i = min(t["VEC_BLOCK_I"], triton.next_power_of_2(inner))
    while block_i > 32 and outer * triton.cdiv(inner, block_i) * split < t["MIN_PROGRAMS"]:
        block_i //= 2
    if split > 1:
        part_v = torch.empty((split, outer, inner), dtype=torch.float32, device=x.device)
        part_i = torch.empty((split, outer, inner), dtype=torch.int32, device=x.device)
    else:
        part_v = part_i = out  # not touched
    n_cols = triton.cdiv(inner, block_i)
    grid = (n_cols * split * outer,) if t["COLS_FIRST"] else (outer, n_cols, split)
    _reduce_mid_vec_kernel[grid](
        x, out, part_v, part_i, outer, n_red, inner // vec, r_chunk, n_cols,
        OP=code, BLOCK_R=block_r, BLOCK_I=block_i, VEC=vec, SPLIT=split, STAGES=t["STAGES"],
        EVICT=t["EVICT_COL"], COLS_FIRST=bool(t["COLS_FIRST"]), num_warps=t["num_warps_col"],
    )
    if split > 1:
        n_out = outer * inner
        _reduce_combine_kernel[(triton.cdiv(n_out, 1024),)](
            part_v, part_i, out, n_out, n_red, OP=code, SPLIT=split, BLOCK=1024, num_warps=4,
        )


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
        grid = (triton.cdiv(outer, rows),)
        if t["ALIGN_ROW"]:
            _reduce_last_aligned_kernel[grid](
                x, out, outer, n_red, OP=code, ROWS=rows, BLOCK_R=max(block_r, 16 // x.element_size()),
                VEC=16 // x.element_size(), STAGES=t["STAGES"], num_warps=t["num_warps_row"],
            )
        else:
            _reduce_last_kernel[grid](
                x, out, outer, n_red, n_red, OP=code, ROWS=rows, BLOCK_R=block_r, num_warps=t["num_warps_row"],
            )
    elif t["COL_STRATEGY"] not in ("auto", "tile", "vec"):
        raise ValueError(f"reduction: TUNABLES['COL_STRATEGY'] = {t['COL_STRATEGY']!r}, expected 'auto', 'tile' "
                         "or 'vec'")
    elif t["COL_STRATEGY"] == "vec" or (t["COL_STRATEGY"] == "auto" and inner % 16):
        _reduce_mid_vec(x, out, code, outer, n_red, inner)
    else:
        block_i = min(t["BLOCK_I"], triton.next_power_of_2(inner))
        while block_i > 32 and outer * triton.cdiv(inner, block_i) < t["MIN_PROGRAMS"]:
            block_i //= 2
        block_r = min(t["BLOCK_R_COL"] * max(1, 4 // x.element_size()), triton.next_power_of_2(n_red))
        n_cols = triton.cdiv(inner, block_i)
        _reduce_mid_kernel[(n_cols * outer,) if t["COLS_FIRST"] else (outer, n_cols)](
            x, out, n_red, inner, n_red * inner, inner, n_cols,
            OP=code, BLOCK_R=block_r, BLOCK_I=block_i, EVICT=t["EVICT_COL"], COLS_FIRST=bool(t["COLS_FIRST"]),
            num_warps=t["num_warps_col"],
        )
    return out


class ModelNew(nn.Module):
    def __init__(self, op: str, dim: int):
        super().__init__()
        self.op, self.dim = op, dim

    def forward(self, x):
        return reduce_dim(x, self.op, self.dim)
