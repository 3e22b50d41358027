"""2-D max and average pooling (NCHW) in Triton: a flat kernel over all outputs, whole output rows, or tiles.

Usage: a KernelBench-format candidate; the harness loads it next to a spec from ./specs/, e.g.
    python -m harness.cli eval corpus/kernels/pool2d/specs/maxpool_k3s2p1_fp32.py corpus/kernels/pool2d/kernel.py

Memory-bound: the ideal traffic is one read of the input plus one write of the output, N*C*(H*W + OH*OW)
elements. Overlapping windows (kernel > stride) re-read neighbouring input rows, which the tile keeps in
L1/L2, so a program covers a BLOCK_H x BLOCK_W patch of one (n, c) plane. The window loop is unrolled
(kernel sizes are constexpr); padding reads count as -inf (max) or 0 (avg, divisor kernel_size**2 as in
PyTorch's default count_include_pad=True). Accumulation is in fp32.

Layouts (TUNABLES["LAYOUT"], default "rows"; TUNABLES["LAYOUT_STRIDE1"], default "groups", for windows of
stride 1 along W):
- "flat": the N*C*OH*OW outputs are one 1-D range, XBLOCK per program (thousands of programs
  for any plane size, no partial tiles but the last). Plane sizes are constexprs, so the per-element
  div/mod that recovers (plane, oh, ow) compiles to multiply-shift. With PAIR and stride 2 along W, the
  window's columns are loaded as aligned (even, odd) pairs, a 2-element vector load split in registers,
  instead of one scalar load per column.
  With VEC = V in (2, 4) (stride 2 along W, window columns within 2 of the output's own pair), groups of
  V adjacent outputs of one output row are the unit: per window row one aligned 2V-element vector load
  (columns 2*ow0 .. 2*ow0 + 2V - 1), split into even and odd columns in registers, plus one scalar load
  per column the block lacks (e.g. column 2*ow0 - 1 for k3 p1), shifted in by split/join. XBLOCK still
  counts outputs (XBLOCK / V groups per program).
- "rows": ROWS whole output rows per program (rows may span planes), each padded to OWP = a power of 2
  columns, for stride 1 or 2 along W. The input columns 0 .. SW*OWP - 1 of each window row are one
  contiguous load (16-byte vectors: W and the row stride are constexprs, so the column mask keeps its
  constancy), folded over the window rows in registers; for SW = 2 a reshape + split gives the even and
  odd columns. The window columns of the output's own column group are those values; a column m outputs
  away (e.g. 2*ow - 1 for k3 p1: the odd column of ow - 1) is, by TAPS, a tl.gather of the folded row
  ("gather"), its own loads ("load", L1 hits), or every window column is its own loads ("direct", the
  fall-back without reshape or gather). The 16-bit specs were instruction-bound in "flat" (~94 SASS
  instructions an output for maxpool k3s2p1 bf16); "rows"/"gather" is 22-30 (sm_90, triton 3.6).
  With SHARE_ROWS, a strip of ROWS output rows of one plane (any count; a plane's last strip is masked
  past OH) walks its (ROWS-1)*SH + KH input rows top to bottom: each is loaded once (16-byte vectors)
  and folded along W once, and output row r is the fold of the last KH folded rows, carried in registers
  (separable: KW-1 + KH-1 adds an output, not KH*KW-1). Each input row is loaded once per strip instead
  of KH times; with TAPS "gather" the next 4 rows' loads are issued ahead (the gather's barriers would
  otherwise serialise them), other TAPS load each tap. STRIPS strips per program (0: one 16-byte load a
  thread a row). SASS (sm_90, triton 3.6)
  per output, ROWS 8: avgpool k3s1p1 bf16 ~12 (rows/gather: 30), avgpool k2s2 fp32 ~11 (30), maxpool
  k3s2p1 bf16 ~22 (30), fp32 ~25 (34).
- "groups" (stride 1 or 2 along W, window columns within -1 .. SW of the output's own, KH <= 4; else
  "rows"): one thread per (strip, group), a group being V adjacent input columns (one 16-byte vector;
  GROUP_V 4: 4 columns) and its V / SW outputs; items are numbered (plane, strip, group) with the groups
  of a row counted exactly (56 = 7 x 8 bf16), so no lane pads a row to a power of 2. Each thread walks its
  strip's input rows as SHARE_ROWS does (each row loaded once, folded along W once, output row r = fold of
  the last KH folded rows), with AHEAD rows' loads in flight (a tuple ring; AHEAD >= the strip's input rows
  issues them all up front, as a copy kernel would: sm_90 SASS at ROWS 8, bf16 words: AHEAD 10 issues all
  10 row loads before the first fold, 56 registers; AHEAD 4 issues 5, the rest once the first arrive, 40). The shifted window columns need no shared memory and no
  barriers: the vector splits into even and odd columns in registers and the column left (right) of the
  group is, by HALO, a scalar load of the neighbour's vector ("load": an L1 hit, but each halo load asks
  for as many sectors as the row load) or the neighbour lane's loaded unit ("shfl": a warp-local tl.gather,
  SHFL.IDX on sm_90; loads only at a warp's edge lanes and past a strip's last group), shifted in by
  split/join. WORDS (bf16, even W): rows load as 32-bit words, each half unpacked to fp32 by one shift or
  mask (an extract + shift otherwise). GROUPS items a program; PERSIST caps the grid at PERSIST programs
  an SM looping over the blocks. SASS (sm_90, triton 3.6) per output: avgpool k3s1p1 bf16 9.4 (ROWS 8,
  WORDS; 7.4 ROWS 56; shared rows/gather: 14 plus 39 barriers a thread), avgpool k2s2 fp32 11.5 (rows:
  34 per real output), maxpool k3s2p1 bf16 17.8 (34), fp32 18.5 (39).
- "tile": the original layout, one program per BLOCK_H x BLOCK_W tile of one (n, c) plane.
"""

import torch
import triton
import triton.language as tl
from torch import nn

TUNABLES = {
    "LAYOUT": "rows",  # "flat": 1-D over all outputs; "rows": whole output rows; "groups": a column group a
    # thread walking a strip of rows; "tile": BLOCK_H x BLOCK_W tiles
    # the layout for windows of stride 1 along W ("" = LAYOUT): avgpool k3s1p1 bf16 0.0440 -> 0.0342 ms with
    # groups (GROUP_V 4, WORDS 1), benchmarks/results/sweep-20261130T165611Z.json
    "LAYOUT_STRIDE1": "groups",
    "XBLOCK": 1024,  # flat: outputs per program
    "PAIR": 1,  # flat, stride 2 along W: load window columns as aligned (even, odd) pairs
    "VEC": 1,  # flat, stride 2 along W: 2 or 4 = each thread's V adjacent outputs from one aligned 2V-wide load
    "num_warps_flat": 8,
    "ROWS": 8,  # rows: output rows per program (capped at 64 loaded values a thread per window row); with
    # SHARE_ROWS and in groups: output rows a strip
    "TAPS": "gather",  # rows: shifted window columns by "gather" (tl.gather), "load" (own loads) or "direct"
    "num_warps_rows": 4,
    # rows: a program walks ROWS output rows of one plane, loading each input row once; "stride1": only for
    # stride 1 along W (avgpool k3s1p1 bf16 0.0470 -> 0.0431 ms; stride 2 measured slower:
    # sweep-20261130T155022Z.json)
    "SHARE_ROWS": "stride1",
    "STRIPS": 8,  # rows with SHARE_ROWS: strips (ROWS-row runs of a plane) per program; 0 = one 16-byte load a thread
    "GROUP_V": 4,  # groups: input columns a thread loads a row: 0 = one 16-byte vector, 4 = 4 columns
    "GROUPS": 128,  # groups: (strip, column group) items a block, a power of 2
    # groups: input rows whose loads are in flight (>= the strip's input rows: all up front), and the columns
    # beside a group by "load" (scalar loads) or "shfl" (neighbour lanes): avgpool k3s1p1 bf16 0.0336 ms with
    # 4 and "load", 0.0328 with 10 and "load", 0.0315 with 10 and "shfl" (sweep-20261130T220824Z.json)
    "AHEAD": 10,
    "HALO": "shfl",
    "PERSIST": 0,  # groups: at most PERSIST programs an SM, each looping over blocks (0: one block a program)
    "WORDS": 1,  # groups, bf16: load 32-bit words, unpacking each half by one shift or mask
    "num_warps_groups": 4,
    "BLOCK_H": 8,  # tile: output rows per program
    "BLOCK_W": 64,  # tile: output columns per program
    "num_warps": 4,  # tile
}


@triton.jit
def _pool2d_kernel(
    x_ptr, y_ptr,
    C, H, W, OH, OW,
    stride_xn, stride_xc, stride_xh, stride_xw,
    KH: tl.constexpr, KW: tl.constexpr, SH: tl.constexpr, SW: tl.constexpr, PH: tl.constexpr,
    PW: tl.constexpr, IS_MAX: tl.constexpr, BLOCK_H: tl.constexpr, BLOCK_W: tl.constexpr,
):
    plane = tl.program_id(0)  # n * C + c (axis 0: up to 2**31 - 1 programs)
    tiles_w = tl.cdiv(OW, BLOCK_W)
    tile_h = tl.program_id(1) // tiles_w
    tile_w = tl.program_id(1) % tiles_w
    n = plane // C
    c = plane % C
    oh = tile_h * BLOCK_H + tl.arange(0, BLOCK_H)
    ow = tile_w * BLOCK_W + tl.arange(0, BLOCK_W)
    out_mask = (oh[:, None] < OH) & (ow[None, :] < OW)
    base = x_ptr + n.to(tl.int64) * stride_xn + c.to(tl.int64) * stride_xc

    if IS_MAX:
        acc = tl.full((BLOCK_H, BLOCK_W), float("-inf"), dtype=tl.float32)
    else:
        acc = tl.zeros((BLOCK_H, BLOCK_W), dtype=tl.float32)
    for kh in tl.static_range(KH):
        ih = oh * SH - PH + kh
        row_ok = (ih >= 0) & (ih < H)
        for kw in tl.static_range(KW):
            iw = ow * SW - PW + kw
            ok = row_ok[:, None] & (iw[None, :] >= 0) & (iw[None, :] < W) & out_mask
            ptrs = base + ih[:, None] * stride_xh + iw[None, :] * stride_xw
            if IS_MAX:
                v = tl.load(ptrs, mask=ok, other=float("-inf")).to(tl.float32)
                # NaN propagates as in PyTorch: a NaN in the window makes the output NaN.
                acc = tl.where((v > acc) | (v != v), v, acc)  # noqa: PLR0124 - v != v is the NaN test
            else:
                acc += tl.load(ptrs, mask=ok, other=0.0).to(tl.float32)
    if not IS_MAX:
        acc = acc * (1.0 / (KH * KW))
    y_ptrs = y_ptr + plane.to(tl.int64) * OH * OW + oh[:, None] * OW + ow[None, :]
    tl.store(y_ptrs, acc.to(y_ptr.dtype.element_ty), mask=out_mask)


@triton.jit
def _fold(acc, v, IS_MAX: tl.constexpr):
    if IS_MAX:
        # NaN propagates as in PyTorch: a NaN in the window makes the output NaN.
        acc = tl.where((v > acc) | (v != v), v, acc)  # noqa: PLR0124 - v != v is the NaN test
    else:
        acc += v
    return acc


@triton.jit
def _pool2d_flat_kernel(
    x_ptr, y_ptr, total,
    H: tl.constexpr, W: tl.constexpr, OH: tl.constexpr, OW: tl.constexpr,
    KH: tl.constexpr, KW: tl.constexpr, SH: tl.constexpr, SW: tl.constexpr, PH: tl.constexpr,
    PW: tl.constexpr, IS_MAX: tl.constexpr, PAIR: tl.constexpr, M_LO: tl.constexpr, M_HI: tl.constexpr,
    XBLOCK: tl.constexpr, INT64: tl.constexpr,
):
    # x is contiguous NCHW; output index = (plane * OH + oh) * OW + ow
    if INT64:
        offs = tl.program_id(0).to(tl.int64) * XBLOCK + tl.arange(0, XBLOCK)
    else:
        offs = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)
    mask = offs < total
    ow = offs % OW  # constexpr divisors: multiply-shift, no integer division
    t = offs // OW
    oh = t % OH
    plane = t // OH
    base = x_ptr + plane * (H * W)
    fill: tl.constexpr = float("-inf") if IS_MAX else 0.0
    acc = tl.full((XBLOCK,), fill, dtype=tl.float32)
    for kh in tl.static_range(KH):
        ih = oh * SH - PH + kh
        row_ok = mask & (ih >= 0) & (ih < H)
        row = base + ih * W
        if PAIR:
            # SW == 2: window column 2*ow - PW + kw is lane (kw - PW) % 2 of the pair starting at
            # 2*ow + 2*m, m = (kw - PW) // 2; each pair is one aligned 2-element load.
            for m in tl.static_range(M_LO, M_HI + 1):
                cols = (2 * ow + 2 * m)[:, None] + tl.arange(0, 2)[None, :]
                ok = row_ok[:, None] & (cols >= 0) & (cols < W)
                v = tl.load(row[:, None] + cols, mask=ok, other=fill).to(tl.float32)
                even, odd = tl.split(v)
                if 2 * m + PW >= 0 and 2 * m + PW < KW:
                    acc = _fold(acc, even, IS_MAX)
                if 2 * m + 1 + PW >= 0 and 2 * m + 1 + PW < KW:
                    acc = _fold(acc, odd, IS_MAX)
        else:
            for kw in tl.static_range(KW):
                iw = ow * SW - PW + kw
                ok = row_ok & (iw >= 0) & (iw < W)
                v = tl.load(row + iw, mask=ok, other=fill).to(tl.float32)
                acc = _fold(acc, v, IS_MAX)
    if not IS_MAX:
        acc = acc * (1.0 / (KH * KW))
    tl.store(y_ptr + offs, acc.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _shift_in(a, h, RBLOCK: tl.constexpr, V: tl.constexpr, RIGHT: tl.constexpr):
    # a (RBLOCK, V) = [a0 .. a(V-1)] along axis 1, h (RBLOCK,):
    # RIGHT: [h, a0, .., a(V-2)]; else [a1, .., a(V-1), h]. V is 2 or 4; split/join stay in registers.
    if V == 2:
        a0, a1 = tl.split(a)
        if RIGHT:
            out = tl.join(h, a0)
        else:
            out = tl.join(a1, h)
    else:
        p, q = tl.split(tl.reshape(a, (RBLOCK, 2, 2)))  # p = (a0, a2), q = (a1, a3)
        if RIGHT:
            a1, _a3 = tl.split(q)
            out = tl.reshape(tl.join(tl.join(h, a1), p), (RBLOCK, 4))  # (h, a1) x (a0, a2) -> h a0 a1 a2
        else:
            a0, a2 = tl.split(p)
            out = tl.reshape(tl.join(q, tl.join(a2, h)), (RBLOCK, 4))  # (a1, a3) x (a2, h) -> a1 a2 a3 h
    return out


@triton.jit
def _pool2d_vec_kernel(
    x_ptr, y_ptr, total_groups,
    H: tl.constexpr, W: tl.constexpr, OH: tl.constexpr, OW: tl.constexpr, GW: tl.constexpr,
    KH: tl.constexpr, KW: tl.constexpr, SH: tl.constexpr, PH: tl.constexpr, PW: tl.constexpr,
    IS_MAX: tl.constexpr, V: tl.constexpr, RBLOCK: tl.constexpr, INT64: tl.constexpr,
):
    # Stride 2 along W. Group index = (plane * OH + oh) * GW + gw; a group is outputs ow0 .. ow0 + V - 1,
    # ow0 = gw * V, of one output row (the last group of a row may be partial: masked).
    if INT64:
        g = tl.program_id(0).to(tl.int64) * RBLOCK + tl.arange(0, RBLOCK)
    else:
        g = tl.program_id(0) * RBLOCK + tl.arange(0, RBLOCK)
    gmask = g < total_groups
    gw = g % GW  # constexpr divisors: multiply-shift
    t = g // GW  # plane * OH + oh
    oh = t % OH
    plane = t // OH
    ow = (gw * V)[:, None] + tl.arange(0, V)[None, :]
    out_mask = gmask[:, None] & (ow < OW)
    c0 = gw * (2 * V)  # first input column of the aligned block: 2 * ow0
    lane = tl.arange(0, 2 * V)
    base = x_ptr + plane * (H * W)
    fill: tl.constexpr = float("-inf") if IS_MAX else 0.0
    acc = tl.full((RBLOCK, V), fill, dtype=tl.float32)
    for kh in tl.static_range(KH):
        ih = oh * SH - PH + kh
        row_ok = gmask & (ih >= 0) & (ih < H)
        row = base + ih * W
        cols = c0[:, None] + lane[None, :]
        v = tl.load(row[:, None] + cols, mask=row_ok[:, None] & (cols < W), other=fill).to(tl.float32)
        even, odd = tl.split(tl.reshape(v, (RBLOCK, V, 2)))  # columns 2*ow and 2*ow + 1
        for kw in tl.static_range(KW):
            # window column 2*ow + kw - PW = 2*(ow + m) + r, e = kw - PW + 2 >= 0 (host checks |m| <= 1);
            # plain names: triton 3.6 refuses to re-define an annotated constexpr in an unrolled loop
            e = kw - PW + 2
            r = e % 2
            m = e // 2 - 1
            if r == 0:
                src = even
            else:
                src = odd
            if m == 0:
                col = src
            elif m < 0:  # output ow0's column is 2*ow0 - 2 + r, left of the block
                hc = c0 - 2 + r
                h = tl.load(row + hc, mask=row_ok & (hc >= 0), other=fill).to(tl.float32)
                col = _shift_in(src, h, RBLOCK, V, True)
            else:  # the last output's column is 2*ow0 + 2V + r, right of the block
                hc = c0 + 2 * V + r
                h = tl.load(row + hc, mask=row_ok & (hc < W), other=fill).to(tl.float32)
                col = _shift_in(src, h, RBLOCK, V, False)
            acc = _fold(acc, col, IS_MAX)
    if not IS_MAX:
        acc = acc * (1.0 / (KH * KW))
    tl.store(y_ptr + t[:, None] * OW + ow, acc.to(y_ptr.dtype.element_ty), mask=out_mask)


@triton.jit
def _max_or_sum(acc, v, IS_MAX: tl.constexpr):
    if IS_MAX:
        # max.NaN: a NaN in the window makes the output NaN, as in PyTorch
        acc = tl.maximum(acc, v, propagate_nan=tl.PropagateNan.ALL)
    else:
        acc += v
    return acc


@triton.jit
def _window_out(h, p1, p2, p3, KH: tl.constexpr, KW: tl.constexpr, IS_MAX: tl.constexpr):
    # an output row from the newest folded input row h and the KH - 1 before it: their max, or the mean over
    # the KH x KW window (the padding counts in the divisor)
    acc = h
    if KH > 1:
        acc = _max_or_sum(acc, p1, IS_MAX)
    if KH > 2:
        acc = _max_or_sum(acc, p2, IS_MAX)
    if KH > 3:
        acc = _max_or_sum(acc, p3, IS_MAX)
    if not IS_MAX:
        acc = acc * (1.0 / (KH * KW))
    return acc


@triton.jit
def _column_rows(
    x_ptr, g, cols, col_ok, rows_total,
    H: tl.constexpr, W: tl.constexpr, OH: tl.constexpr, KH: tl.constexpr, SH: tl.constexpr, PH: tl.constexpr,
    IS_MAX: tl.constexpr,
):
    # The window's KH input rows of output row g (= plane * OH + oh) at input columns `cols`, folded in
    # fp32: for max of bf16 ptxas narrows it back to packed bf16x2 max.NaN (sm_90 SASS), and tl.maximum on
    # bf16 itself is wrong in the CPU interpreter (max(-2, 7) gave -2, as if comparing raw bits).
    # Padding rows and columns read as -inf (max) or 0 (avg).
    fill: tl.constexpr = float("-inf") if IS_MAX else 0.0
    oh = g % OH  # constexpr divisors: multiply-shift
    plane_ptr = x_ptr + (g // OH) * (H * W)
    ok = col_ok & (g < rows_total)
    for kh in tl.static_range(KH):
        ih = oh * SH - PH + kh
        v = tl.load(plane_ptr + ih * W + cols, mask=ok & (ih >= 0) & (ih < H), other=fill).to(tl.float32)
        if kh == 0:
            acc = v
        else:
            acc = _max_or_sum(acc, v, IS_MAX)
    return acc


@triton.jit
def _pool2d_rows_kernel(
    x_ptr, y_ptr, rows_total,
    H: tl.constexpr, W: tl.constexpr, OH: tl.constexpr, OW: tl.constexpr,
    KH: tl.constexpr, KW: tl.constexpr, SH: tl.constexpr, SW: tl.constexpr, PH: tl.constexpr,
    PW: tl.constexpr, IS_MAX: tl.constexpr, ROWS: tl.constexpr, OWP: tl.constexpr, TAPS: tl.constexpr,
    INT64: tl.constexpr,
):
    # ROWS whole output rows (row g = plane * OH + oh, rows may span planes), OWP >= OW columns each.
    # Window column kw of output ow is input column SW*ow + d, d = kw - PW = SW*m + p (0 <= p < SW):
    # lane p of the output's own SW-wide column group, shifted by m outputs.
    # TAPS "gather"/"load": the rows' input columns 0 .. SW*OWP - 1 are read by one contiguous load per
    # window row (16-byte vectors), folded over the window rows, and for SW = 2 split into even/odd
    # columns (the m = 0 taps); each m != 0 tap is then a tl.gather of that folded row ("gather") or its
    # own KH loads ("load"). TAPS "direct": every tap is its own KH loads (no reshape, no gather).
    if INT64:
        g0 = tl.program_id(0).to(tl.int64) * ROWS
    else:
        g0 = tl.program_id(0) * ROWS
    fill: tl.constexpr = float("-inf") if IS_MAX else 0.0
    i = tl.arange(0, ROWS * OWP)  # output position within the program
    g = g0 + i // OWP
    ow = i % OWP
    if TAPS != "direct":
        SPAN: tl.constexpr = SW * OWP
        j = tl.arange(0, ROWS * SPAN)
        cols = j % SPAN
        rows = _column_rows(x_ptr, g0 + j // SPAN, cols, cols < W, rows_total, H, W, OH, KH, SH, PH, IS_MAX)
        if SW == 2:
            even, odd = tl.split(tl.reshape(rows, (ROWS * OWP, 2)))
    for kw in tl.static_range(KW):
        # d + 2*SW >= 0 keeps // and % off negative operands. No `: tl.constexpr` annotations inside the
        # loop: triton 3.6 refuses to re-define an annotated constexpr on the next unrolled iteration.
        e = kw - PW + 2 * SW
        m = e // SW - 2
        if TAPS == "direct" or (m != 0 and TAPS == "load"):
            tap_cols = ow * SW + (kw - PW)
            tap = _column_rows(x_ptr, g, tap_cols, (tap_cols >= 0) & (tap_cols < W), rows_total, H, W, OH, KH,
                               SH, PH, IS_MAX)
        else:
            if SW == 1:
                src = rows
            elif e % 2 == 0:
                src = even
            else:
                src = odd
            if m == 0:
                tap = src
            else:
                # the neighbour m outputs away in the same row; past the row's left end is padding, past
                # its right end only outputs >= OW (masked) look
                tap = tl.gather(src, tl.minimum(tl.maximum(i + m, 0), ROWS * OWP - 1), 0)
                if m < 0:
                    tap = tl.where(ow + m >= 0, tap, fill)
        if kw == 0:
            acc = tap
        else:
            acc = _max_or_sum(acc, tap, IS_MAX)
    if not IS_MAX:
        acc = acc * (1.0 / (KH * KW))
    tl.store(y_ptr + g * OW + ow, acc.to(y_ptr.dtype.element_ty), mask=(g < rows_total) & (ow < OW))


@triton.jit
def _row_fold_gather(
    v, i, ow, KW: tl.constexpr, SW: tl.constexpr, PW: tl.constexpr, IS_MAX: tl.constexpr, N: tl.constexpr,
):
    # The KW-column window fold of one loaded input row v (columns 0 .. SW*OWP - 1) for outputs i (column
    # ow of their row), fp32: v split into even/odd columns at SW = 2; a tap m outputs away is a tl.gather.
    fill: tl.constexpr = float("-inf") if IS_MAX else 0.0
    v = v.to(tl.float32)
    if SW == 2:
        even, odd = tl.split(tl.reshape(v, (N, 2)))
    for kw in tl.static_range(KW):
        # as in _pool2d_rows_kernel: no constexpr annotations in the unrolled loop (triton 3.6)
        e = kw - PW + 2 * SW
        m = e // SW - 2
        if SW == 1:
            src = v
        elif e % 2 == 0:
            src = even
        else:
            src = odd
        if m == 0:
            tap = src
        else:
            # past the row's left end is padding; past its right end only outputs >= OW look
            tap = tl.gather(src, tl.minimum(tl.maximum(i + m, 0), N - 1), 0)
            if m < 0:
                tap = tl.where(ow + m >= 0, tap, fill)
        if kw == 0:
            acc = tap
        else:
            acc = _max_or_sum(acc, tap, IS_MAX)
    return acc


@triton.jit
def _row_fold_load(
    row_ptr, row_ok, ow, W: tl.constexpr, KW: tl.constexpr, SW: tl.constexpr, PW: tl.constexpr,
    IS_MAX: tl.constexpr,
):
    # The KW-column window fold of one input row, each tap its own load (no reshape, no gather), fp32.
    fill: tl.constexpr = float("-inf") if IS_MAX else 0.0
    for kw in tl.static_range(KW):
        tap_cols = ow * SW + (kw - PW)
        tap = tl.load(row_ptr + tap_cols, mask=row_ok & (tap_cols >= 0) & (tap_cols < W), other=fill).to(tl.float32)
        if kw == 0:
            acc = tap
        else:
            acc = _max_or_sum(acc, tap, IS_MAX)
    return acc


@triton.jit
def _load_row(in_ptr, ih, cols, strip_ok, H: tl.constexpr, W: tl.constexpr, IS_MAX: tl.constexpr):
    # input row ih of each strip, columns `cols`; padding rows and columns read as -inf (max) or 0 (avg)
    fill: tl.constexpr = float("-inf") if IS_MAX else 0.0
    return tl.load(in_ptr + ih * W + cols, mask=strip_ok & (cols < W) & (ih >= 0) & (ih < H), other=fill)


@triton.jit
def _pool2d_shared_rows_kernel(
    x_ptr, y_ptr, strips_total,
    H: tl.constexpr, W: tl.constexpr, OH: tl.constexpr, OW: tl.constexpr,
    KH: tl.constexpr, KW: tl.constexpr, SH: tl.constexpr, SW: tl.constexpr, PH: tl.constexpr,
    PW: tl.constexpr, IS_MAX: tl.constexpr, ROWS: tl.constexpr, STRIPS: tl.constexpr, OWP: tl.constexpr,
    TAPS: tl.constexpr, INT64: tl.constexpr,
):
    # STRIPS strips per program; strip q = plane * NB + b is output rows b*ROWS .. b*ROWS + ROWS - 1 of one
    # plane (the last strip of a plane is masked past OH). The strip walks its (ROWS-1)*SH + KH input rows
    # once, top to bottom: each row is loaded and folded along W once, and output row r is the fold of the
    # last KH folded rows when row r*SH + KH - 1 arrives (separable: KW-1 + KH-1 ops an output, not KH*KW-1).
    # KH <= 4 (the launcher checks): the last KH-1 folded rows are carried in p1 .. p3.
    NB: tl.constexpr = (OH + ROWS - 1) // ROWS
    if TAPS == "gather":
        SPAN: tl.constexpr = SW * OWP  # one contiguous load of input columns 0 .. SPAN - 1
    else:
        SPAN: tl.constexpr = OWP  # loads in output positions, one a tap
    if INT64:
        q0 = tl.program_id(0).to(tl.int64) * STRIPS
    else:
        q0 = tl.program_id(0) * STRIPS
    j = tl.arange(0, STRIPS * SPAN)  # loaded position: strip j // SPAN, column j % SPAN
    qj = q0 + j // SPAN
    cols = j % SPAN
    ih0 = (qj % NB) * (ROWS * SH) - PH  # constexpr divisors: multiply-shift
    in_ptr = x_ptr + (qj // NB) * (H * W)
    i = tl.arange(0, STRIPS * OWP)  # output position: strip i // OWP, column i % OWP
    qi = q0 + i // OWP
    ow = i % OWP
    oh0 = (qi % NB) * ROWS
    out_ptr = y_ptr + (qi // NB) * (OH * OW) + oh0 * OW + ow
    out_ok = (qi < strips_total) & (ow < OW)
    strip_ok = qj < strips_total
    NT: tl.constexpr = (ROWS - 1) * SH + KH
    # the last KH - 1 folded rows, newest first (read only once set: output row r needs rows >= r*SH)
    p1 = tl.zeros((STRIPS * OWP,), dtype=tl.float32)
    p2 = p1
    p3 = p1
    for t in tl.static_range(NT):
        if TAPS == "gather":
            # rows t .. t+3 are loaded ahead in q0 .. q3: the gather's barriers keep a load from moving
            # above the previous row's fold, which would leave one 16-byte load a thread in flight
            if t == 0:
                q0 = _load_row(in_ptr, ih0, cols, strip_ok, H, W, IS_MAX)
                q1 = q0
                q2 = q0
                q3 = q0
                if NT > 1:
                    q1 = _load_row(in_ptr, ih0 + 1, cols, strip_ok, H, W, IS_MAX)
                if NT > 2:
                    q2 = _load_row(in_ptr, ih0 + 2, cols, strip_ok, H, W, IS_MAX)
                if NT > 3:
                    q3 = _load_row(in_ptr, ih0 + 3, cols, strip_ok, H, W, IS_MAX)
            h = _row_fold_gather(q0, i, ow, KW, SW, PW, IS_MAX, STRIPS * OWP)
            q0 = q1
            q1 = q2
            q2 = q3
            if t + 4 < NT:
                q3 = _load_row(in_ptr, ih0 + t + 4, cols, strip_ok, H, W, IS_MAX)
        else:
            ih = ih0 + t
            h = _row_fold_load(in_ptr + ih * W, strip_ok & (ih >= 0) & (ih < H), ow, W, KW, SW, PW, IS_MAX)
        if t >= KH - 1 and (t - KH + 1) % SH == 0:
            r = (t - KH + 1) // SH
            acc = _window_out(h, p1, p2, p3, KH, KW, IS_MAX)
            tl.store(out_ptr + r * OW, acc.to(y_ptr.dtype.element_ty), mask=out_ok & (oh0 + r < OH))
        p3 = p2
        p2 = p1
        p1 = h


@triton.jit
def _group_row(row_ptr, u0, ok, RW: tl.constexpr, L: tl.constexpr, NEED_L: tl.constexpr, NEED_R: tl.constexpr,
               IS_MAX: tl.constexpr, WORDS: tl.constexpr, SHFL: tl.constexpr, N: tl.constexpr, UG: tl.constexpr):
    # One input row of each group: units u0 .. u0 + L - 1 of the row (one vector load a thread; a unit is a
    # column, or with WORDS a 32-bit word of 2 bf16 columns; RW units a row) and, where the window reaches
    # them, the units left and right of the group: scalar loads of the neighbours' vectors (L1 hits), or
    # with SHFL the neighbour lanes' loaded units (the groups u0 -+ L of the strip are items i -+ 1), loads
    # only for lanes at a warp's edge or past the strip's last group (UG units).
    # Raw values (2 bf16 a register) until folded; padding reads -inf (max) or 0 (avg).
    if WORDS:
        fill: tl.constexpr = -8323200 if IS_MAX else 0  # 0xFF80FF80: two bf16 -inf
    else:
        fill: tl.constexpr = float("-inf") if IS_MAX else 0.0
    units = u0[:, None] + tl.arange(0, L)[None, :]
    a = tl.load(row_ptr[:, None] + tl.arange(0, L)[None, :], mask=ok[:, None] & (units < RW), other=fill)
    hl = tl.full(u0.shape, fill, dtype=a.dtype)
    hr = hl
    if SHFL:
        lane = tl.arange(0, N) % 32
        first, last = _end_units(a, N, L)
        near_l = (lane >= 1) & (u0 >= 1)
        near_r = (lane <= 30) & (u0 + L < UG)
        if NEED_L:
            hl = tl.load(row_ptr - 1, mask=ok & (u0 >= 1) & ~near_l, other=fill)
            hl = tl.where(near_l, _from_lane(last, -1, N), hl)
        if NEED_R:
            hr = tl.load(row_ptr + L, mask=ok & (u0 + L < RW) & ~near_r, other=fill)
            hr = tl.where(near_r, _from_lane(first, 1, N), hr)
    else:
        if NEED_L:
            hl = tl.load(row_ptr - 1, mask=ok & (u0 >= 1), other=fill)
        if NEED_R:
            hr = tl.load(row_ptr + L, mask=ok & (u0 + L < RW), other=fill)
    return a, hl, hr


@triton.jit
def _end_units(a, N: tl.constexpr, L: tl.constexpr):
    # the first and last of each item's L units, L = 2 or 4 (split: register renames)
    if L == 2:
        first, last = tl.split(a)
    else:
        p, q = tl.split(tl.reshape(a, (N, 2, 2)))  # p = (a0, a2), q = (a1, a3)
        first, _a2 = tl.split(p)
        _a1, last = tl.split(q)
    return first, last


@triton.jit
def _from_lane(v, d: tl.constexpr, N: tl.constexpr):
    # v of the item d = -1 / +1 lanes away within each warp's 32 items: a warp-local tl.gather (SHFL on
    # sm_90, no shared memory); the warp's edge lanes get their own v (the caller loads theirs instead)
    lanes = tl.broadcast_to(tl.arange(0, 32)[None, :], (N // 32, 32))
    src = tl.minimum(tl.maximum(lanes + d, 0), 31)
    return tl.reshape(tl.gather(tl.reshape(v, (N // 32, 32)), src, 1), (N,))


@triton.jit
def _strip_row(in_ptr, ih0, k: tl.constexpr, u0, ok, H: tl.constexpr, RW: tl.constexpr, L: tl.constexpr,
               NEED_L: tl.constexpr, NEED_R: tl.constexpr, IS_MAX: tl.constexpr, WORDS: tl.constexpr,
               SHFL: tl.constexpr, N: tl.constexpr, UG: tl.constexpr):
    # input row ih0 + k of each strip (rows outside the plane are padding)
    row_ok = ok & (ih0 + k >= 0) & (ih0 + k < H)
    return _group_row(in_ptr + k * RW, u0, row_ok, RW, L, NEED_L, NEED_R, IS_MAX, WORDS, SHFL, N, UG)


@triton.jit
def _bf16_words(w, HIGH: tl.constexpr):
    # the bf16 in the low or high half of 32-bit words, as fp32: one shift or mask (no extract + shift)
    if HIGH:
        return (w & -65536).to(tl.float32, bitcast=True)
    return (w << 16).to(tl.float32, bitcast=True)


@triton.jit
def _group_taps(e, o, o_right, e_left, P: tl.constexpr, KW: tl.constexpr, PW: tl.constexpr, IS_MAX: tl.constexpr):
    # Outputs of column parity P read input columns 2j + s, s = P - PW .. P - PW + KW - 1 (within -1 .. 2,
    # always holding 0 or 1). The in-group taps s = 0, 1 fold first: for KW 3 at stride 1 both parities
    # then share e + o.
    if P - PW <= 0:
        acc = e
        if P - PW + KW - 1 >= 1:
            acc = _max_or_sum(acc, o, IS_MAX)
    else:
        acc = o
    if P - PW <= -1:
        acc = _max_or_sum(acc, o_right, IS_MAX)
    if P - PW + KW - 1 >= 2:
        acc = _max_or_sum(acc, e_left, IS_MAX)
    return acc


@triton.jit
def _group_fold(a, hl, hr, N: tl.constexpr, V: tl.constexpr, SW: tl.constexpr, KW: tl.constexpr,
                PW: tl.constexpr, NEED_L: tl.constexpr, NEED_R: tl.constexpr, IS_MAX: tl.constexpr,
                WORDS: tl.constexpr):
    # The KW-column window fold of one input row for each group's outputs, fp32, in registers: the V
    # columns split into even e and odd o ((N, V/2) each); s = -1 is o shifted right with the left halo
    # in, s = 2 is e shifted left with the right halo in (split/join: register renames).
    # SW = 1: both output parities, interleaved back to (N, V); SW = 2: parity 0 only, (N, V/2).
    if WORDS:  # a: (N, V/2) words, even columns in the low halves; hl's column is a high half, hr's low
        e = _bf16_words(a, False)
        o = _bf16_words(a, True)
        hl = _bf16_words(hl, True)
        hr = _bf16_words(hr, False)
    else:
        e, o = tl.split(tl.reshape(a.to(tl.float32), (N, V // 2, 2)))
        hl = hl.to(tl.float32)
        hr = hr.to(tl.float32)
    o_right = o
    e_left = e
    if NEED_L:
        o_right = _shift_in(o, hl, N, V // 2, True)
    if NEED_R:
        e_left = _shift_in(e, hr, N, V // 2, False)
    h = _group_taps(e, o, o_right, e_left, 0, KW, PW, IS_MAX)
    if SW == 1:
        h = tl.reshape(tl.join(h, _group_taps(e, o, o_right, e_left, 1, KW, PW, IS_MAX)), (N, V))
    return h


@triton.jit
def _pool2d_groups_kernel(
    x_ptr, y_ptr, items_total, blocks_total,
    H: tl.constexpr, W: tl.constexpr, OH: tl.constexpr, OW: tl.constexpr,
    KH: tl.constexpr, KW: tl.constexpr, SH: tl.constexpr, SW: tl.constexpr, PH: tl.constexpr,
    PW: tl.constexpr, IS_MAX: tl.constexpr, ROWS: tl.constexpr, V: tl.constexpr, N: tl.constexpr,
    AHEAD: tl.constexpr, WORDS: tl.constexpr, SHFL: tl.constexpr, INT64: tl.constexpr,
):
    # Item = (strip, group): V adjacent input columns (V / SW outputs) of a strip of ROWS output rows of one
    # plane; item index = (plane * NB + b) * G + g, so a warp's loads are whole row segments and no lane
    # pads a row to a power of 2. Each thread walks its strip's (ROWS-1)*SH + KH input rows top to bottom
    # as the SHARE_ROWS kernel does (each row loaded and folded along W once, output row r = fold of the
    # last KH folded rows, carried in p1 .. p3; KH <= 4), AHEAD rows' loads in flight (no barriers: the
    # shifted columns come from halo loads, not tl.gather). Programs loop over blocks of N items
    # (a persistent grid when the launcher caps the programs).
    G: tl.constexpr = (OW + V // SW - 1) // (V // SW)  # groups an output row
    NB: tl.constexpr = (OH + ROWS - 1) // ROWS  # strips a plane
    NT: tl.constexpr = (ROWS - 1) * SH + KH
    NEED_L: tl.constexpr = PW >= 1
    NEED_R: tl.constexpr = KW - PW - 1 + (2 - SW) >= 2
    if WORDS:  # loads count 32-bit words: 2 columns a unit
        CU: tl.constexpr = 2
        xu_ptr = x_ptr.to(tl.pointer_type(tl.int32))
    else:
        CU: tl.constexpr = 1
        xu_ptr = x_ptr
    RW: tl.constexpr = W // CU  # units a row
    L: tl.constexpr = V // CU  # units a group
    out_lanes = tl.arange(0, V // SW)
    for blk in tl.range(tl.program_id(0), blocks_total, tl.num_programs(0)):
        if INT64:
            it = blk.to(tl.int64) * N + tl.arange(0, N)
        else:
            it = blk * N + tl.arange(0, N)
        ok = it < items_total
        q = it // G  # constexpr divisors: multiply-shift
        c0 = (it % G) * V
        plane = q // NB
        oh0 = (q % NB) * ROWS
        ih0 = oh0 * SH - PH
        u0 = c0 // CU
        in_ptr = xu_ptr + plane * (H * RW) + ih0 * RW + u0
        ow = (c0 // SW)[:, None] + out_lanes[None, :]
        out_ptr = y_ptr + (plane * (OH * OW) + oh0 * OW)[:, None] + ow
        out_ok = ok[:, None] & (ow < OW)
        p1 = tl.zeros((N, V // SW), dtype=tl.float32)  # read only once set: output row r needs rows >= r*SH
        p2 = p1
        p3 = p1
        # rows loaded ahead, oldest first, each (units, left halo, right halo): rows 0 .. AHEAD - 2 before
        # the walk, then row t + AHEAD - 1 before row t folds (AHEAD >= NT: every row of the strip up front)
        ring = ()
        for t in tl.static_range(AHEAD - 1):
            if t < NT:
                ring = ring + (_strip_row(in_ptr, ih0, t, u0, ok, H, RW, L, NEED_L, NEED_R, IS_MAX, WORDS, SHFL, N,
                                          G * L),)
        for t in tl.static_range(NT):
            if t + AHEAD - 1 < NT:
                ring = ring + (_strip_row(in_ptr, ih0, t + AHEAD - 1, u0, ok, H, RW, L, NEED_L, NEED_R, IS_MAX,
                                          WORDS, SHFL, N, G * L),)
            a, hl, hr = ring[0]
            ring = ring[1:]
            h = _group_fold(a, hl, hr, N, V, SW, KW, PW, NEED_L, NEED_R, IS_MAX, WORDS)
            if t >= KH - 1 and (t - KH + 1) % SH == 0:
                r = (t - KH + 1) // SH
                acc = _window_out(h, p1, p2, p3, KH, KW, IS_MAX)
                tl.store(out_ptr + r * OW, acc.to(y_ptr.dtype.element_ty), mask=out_ok & (oh0 + r < OH)[:, None])
            p3 = p2
            p2 = p1
            p1 = h


def _pair(v: int | tuple[int, int]) -> tuple[int, int]:
    return (v, v) if isinstance(v, int) else (int(v[0]), int(v[1]))


def _rows_owp(ow: int, kw: int, sw: int, pw: int) -> int:
    """LAYOUT rows: the padded output row width; the loaded span SW * OWP reaches every column read."""
    return triton.next_power_of_2(max(ow, triton.cdiv(sw * (ow - 1) - pw + kw, sw)))


def _launch_rows(x: torch.Tensor, y: torch.Tensor, is_max: bool, k: tuple, s: tuple, p: tuple, owp: int,
                 span_cap: int) -> None:
    """LAYOUT rows: ROWS output rows per program (at most span_cap loaded values per window row)."""
    t = TUNABLES
    n, c, h, w = x.shape
    oh, ow = y.shape[2:]
    rows_total = n * c * oh
    # ROWS is a block size here (SHARE_ROWS allows any count): round it up to a power of 2
    rows = max(1, min(triton.next_power_of_2(t["ROWS"]), triton.next_power_of_2(rows_total), span_cap // (s[1] * owp)))
    # offsets reach past the last row by up to `rows` rows (masked), in both tensors
    int64 = max(x.numel() + (rows + 1) * h * w, y.numel() + rows * owp) >= 2**31
    _pool2d_rows_kernel[(triton.cdiv(rows_total, rows),)](
        x, y, rows_total,
        H=h, W=w, OH=oh, OW=ow, KH=k[0], KW=k[1], SH=s[0], SW=s[1], PH=p[0], PW=p[1], IS_MAX=is_max,
        ROWS=rows, OWP=owp, TAPS=t["TAPS"], INT64=int64, num_warps=t["num_warps_rows"],
    )


def _launch_shared_rows(x: torch.Tensor, y: torch.Tensor, is_max: bool, k: tuple, s: tuple, p: tuple, owp: int,
                        span_cap: int) -> None:
    """LAYOUT rows with SHARE_ROWS: strips of ROWS output rows of one plane, STRIPS strips per program."""
    t = TUNABLES
    n, c, h, w = x.shape
    oh, ow = y.shape[2:]
    rows = max(1, min(t["ROWS"], oh))  # a loop count, not a block size: any value
    strips_total = n * c * triton.cdiv(oh, rows)
    span = s[1] * owp
    strips = t["STRIPS"] or max(1, 16 // x.element_size() * 32 * t["num_warps_rows"] // span)
    strips = max(1, min(strips, triton.next_power_of_2(strips_total), span_cap // span))
    # offsets reach past the last plane by up to `strips` strips plus one plane (masked), in both tensors
    int64 = max(x.numel(), y.numel()) + (strips + 2) * max(h * w, oh * ow) >= 2**31
    _pool2d_shared_rows_kernel[(triton.cdiv(strips_total, strips),)](
        x, y, strips_total,
        H=h, W=w, OH=oh, OW=ow, KH=k[0], KW=k[1], SH=s[0], SW=s[1], PH=p[0], PW=p[1], IS_MAX=is_max,
        ROWS=rows, STRIPS=strips, OWP=owp, TAPS=t["TAPS"], INT64=int64, num_warps=t["num_warps_rows"],
    )


def _num_sms(device: torch.device) -> int:
    if device.type == "cuda":
        return torch.cuda.get_device_properties(device).multi_processor_count
    return 4  # the CPU interpreter: a small grid


def _group_cols(x: torch.Tensor, k: tuple, s: tuple, p: tuple) -> int:
    """LAYOUT groups: input columns a thread loads a row (one 16-byte vector, or 4 with GROUP_V 4), or 0
    where the layout does not apply: stride 1 or 2 along W, window columns within -1 .. SW of the output's
    own (PW <= 1), KH <= 4 (carried rows), V in (4, 8) (the register shifts of _shift_in). Wider groups
    (two vectors a row) made triton move the split through shared memory."""
    v = 4 if TUNABLES["GROUP_V"] == 4 else 16 // x.element_size()
    fits = s[1] in (1, 2) and p[1] <= 1 and k[1] - p[1] - 1 <= s[1] and k[0] <= 4 and v in (4, 8)
    return v if fits else 0


def _launch_groups(x: torch.Tensor, y: torch.Tensor, is_max: bool, k: tuple, s: tuple, p: tuple, v: int) -> None:
    """LAYOUT groups: one thread a (strip, V-column group); GROUPS items a block, blocks looped over a grid
    of at most PERSIST programs an SM (0: one block a program)."""
    t = TUNABLES
    n, c, h, w = x.shape
    oh, ow = y.shape[2:]
    rows = max(1, min(t["ROWS"], oh))  # a loop count: any value
    items = n * c * triton.cdiv(oh, rows) * triton.cdiv(ow, v // s[1])
    block = max(1, min(t["GROUPS"], triton.next_power_of_2(items)))
    blocks = triton.cdiv(items, block)
    programs = min(blocks, t["PERSIST"] * _num_sms(x.device)) if t["PERSIST"] else blocks
    # masked items of the last block reach one plane (plus a row segment) past each tensor's end
    int64 = max(x.numel(), y.numel()) + (block + 2) * max(h * w, oh * ow) >= 2**31
    # bf16 as 32-bit words: every row starts on a word (even W, word-aligned tensor)
    words = bool(t["WORDS"]) and x.dtype == torch.bfloat16 and w % 2 == 0 and x.data_ptr() % 4 == 0
    if t["HALO"] not in ("load", "shfl"):
        raise ValueError(f"pool2d: TUNABLES['HALO'] is {t['HALO']!r}, not 'load' or 'shfl'")
    # halo units from neighbour lanes: whole warps of items, 2 or 4 units a group (_end_units)
    shfl = t["HALO"] == "shfl" and block % 32 == 0 and v // (2 if words else 1) in (2, 4)
    # AHEAD past the strip's input rows loads them all up front, as AHEAD = rows does: one compiled kernel
    ahead = min(t["AHEAD"], (rows - 1) * s[0] + k[0])
    _pool2d_groups_kernel[(programs,)](
        x, y, items, blocks,
        H=h, W=w, OH=oh, OW=ow, KH=k[0], KW=k[1], SH=s[0], SW=s[1], PH=p[0], PW=p[1], IS_MAX=is_max,
        ROWS=rows, V=v, N=block, AHEAD=ahead, WORDS=words, SHFL=shfl, INT64=int64, num_warps=t["num_warps_groups"],
        num_stages=1,
    )


def pool2d(x: torch.Tensor, kind: str, kernel_size, stride=None, padding=0) -> torch.Tensor:
    """Max or average pooling of x (N, C, H, W); floor mode, avg counts padding in the divisor."""
    if kind not in ("max", "avg"):
        raise ValueError(f"pool2d: kind {kind!r} is not 'max' or 'avg'")
    if x.dim() != 4:
        raise ValueError(f"pool2d: x must be (N, C, H, W), got shape {tuple(x.shape)}")
    kh, kw = _pair(kernel_size)
    sh, sw = _pair(stride if stride is not None else kernel_size)
    ph, pw = _pair(padding)
    if ph > kh // 2 or pw > kw // 2:
        raise ValueError(f"pool2d: padding {(ph, pw)} exceeds half the kernel {(kh, kw)}")
    n, c, h, w = x.shape
    oh = (h + 2 * ph - kh) // sh + 1
    ow = (w + 2 * pw - kw) // sw + 1
    y = torch.empty((n, c, oh, ow), device=x.device, dtype=x.dtype)
    if y.numel() == 0:
        return y
    t = TUNABLES
    layout = (t.get("LAYOUT_STRIDE1") or t["LAYOUT"]) if sw == 1 else t["LAYOUT"]
    vec = int(t.get("VEC", 1))
    if vec not in (1, 2, 4):
        raise ValueError(f"pool2d: TUNABLES['VEC'] is {vec}, not 1, 2 or 4")
    # VEC path: stride 2 along W and every window column within one pair of the output's own pair
    if layout == "flat" and vec > 1 and sw == 2 and pw <= 2 and kw - 1 - pw <= 3:
        x = x.contiguous()
        gw = triton.cdiv(ow, vec)
        groups = n * c * oh * gw
        rblock = max(1, min(t["XBLOCK"] // vec, triton.next_power_of_2(groups)))
        _pool2d_vec_kernel[(triton.cdiv(groups, rblock),)](
            x, y, groups,
            H=h, W=w, OH=oh, OW=ow, GW=gw, KH=kh, KW=kw, SH=sh, PH=ph, PW=pw, IS_MAX=kind == "max",
            V=vec, RBLOCK=rblock, INT64=max(x.numel(), y.numel()) + rblock * 2 * vec >= 2**31,
            num_warps=t["num_warps_flat"],
        )
        return y
    if layout == "groups":
        v = _group_cols(x, (kh, kw), (sh, sw), (ph, pw))
        if v:
            _launch_groups(x.contiguous(), y, kind == "max", (kh, kw), (sh, sw), (ph, pw), v)
            return y
    if layout in ("rows", "groups"):  # groups falls back to rows where it does not apply
        if t["TAPS"] not in ("gather", "load", "direct"):
            raise ValueError(f"pool2d: TUNABLES['TAPS'] is {t['TAPS']!r}, not 'gather', 'load' or 'direct'")
        owp = _rows_owp(ow, kw, sw, pw)
        span_cap = 64 * 32 * t["num_warps_rows"]  # loaded values per window row: <= 64 a thread
        if t["SHARE_ROWS"] not in (False, True, "stride1"):
            raise ValueError(f"pool2d: TUNABLES['SHARE_ROWS'] is {t['SHARE_ROWS']!r}, not False, True or 'stride1'")
        share = t["SHARE_ROWS"] is True or (t["SHARE_ROWS"] == "stride1" and sw == 1)
        if sw in (1, 2) and sw * owp <= span_cap and share and kh <= 4:
            _launch_shared_rows(x.contiguous(), y, kind == "max", (kh, kw), (sh, sw), (ph, pw), owp, span_cap)
            return y
        if sw in (1, 2) and sw * owp <= span_cap:
            _launch_rows(x.contiguous(), y, kind == "max", (kh, kw), (sh, sw), (ph, pw), owp, span_cap)
            return y
    if layout in ("flat", "rows", "groups"):  # rows falls back to flat (stride > 2 along W, or very wide rows)
        x = x.contiguous()
        pair = bool(t["PAIR"]) and sw == 2
        xblock = min(t["XBLOCK"], triton.next_power_of_2(y.numel()))
        _pool2d_flat_kernel[(triton.cdiv(y.numel(), xblock),)](
            x, y, y.numel(),
            H=h, W=w, OH=oh, OW=ow, KH=kh, KW=kw, SH=sh, SW=sw, PH=ph, PW=pw, IS_MAX=kind == "max",
            PAIR=pair, M_LO=(-pw) // 2, M_HI=(kw - 1 - pw) // 2, XBLOCK=xblock,
            INT64=x.numel() + xblock >= 2**31, num_warps=t["num_warps_flat"],
        )
        return y
    if layout != "tile":
        raise ValueError(f"pool2d: TUNABLES['LAYOUT'] is {t['LAYOUT']!r}, not 'flat', 'rows', 'groups' or 'tile'")
    bh, bw = TUNABLES["BLOCK_H"], TUNABLES["BLOCK_W"]
    grid = (n * c, triton.cdiv(oh, bh) * triton.cdiv(ow, bw))
    _pool2d_kernel[grid](
        x, y,
        c, h, w, oh, ow,
        x.stride(0), x.stride(1), x.stride(2), x.stride(3),
        KH=kh, KW=kw, SH=sh, SW=sw, PH=ph, PW=pw, IS_MAX=kind == "max",
        BLOCK_H=bh, BLOCK_W=bw, num_warps=TUNABLES["num_warps"],
    )
    return y


class ModelNew(nn.Module):
    """Same constructor as the pool2d specs' Model: (kind, kernel_size, stride, padding)."""

    def __init__(self, kind: str, kernel_size: int, stride: int, padding: int = 0):
        super().__init__()
        self.kind, self.kernel_size, self.stride, self.padding = kind, kernel_size, stride, padding

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return pool2d(x, self.kind, self.kernel_size, self.stride, self.padding)
