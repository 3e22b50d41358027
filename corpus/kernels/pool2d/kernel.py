"""2-D max and average pooling (NCHW) in Triton: strips of a column group a thread, or whole output rows.

Memory-bound: the ideal traffic is one read of the input plus one write of the output, N*C*(H*W + OH*OW)
elements. Padding reads count as -inf (max) or 0 (avg, divisor kernel_size**2 as in PyTorch's default
count_include_pad=True); accumulation is in fp32; a NaN in a max window makes the output NaN.

Layouts (LAYOUT for windows of stride 2 along W, LAYOUT_STRIDE1 for stride 1; each "rows" or "groups"):
- "groups" (stride 1 or 2 along W, window columns within -1 .. SW of the output's own, KH <= 4; else
  "rows"): one thread per (strip, group), a group being V adjacent input columns (one 16-byte vector;
  GROUP_V 4: 4 columns) and its V / SW outputs; items are numbered (plane, strip, group) with the groups
  of a row counted exactly (56 = 7 x 8 bf16), so no lane pads a row to a power of 2. Each thread walks its
  strip's input rows top to bottom, each loaded once and folded along W once, output row r being the fold
  of the last KH folded rows (separable: KW-1 + KH-1 ops an output, not KH*KW-1), with AHEAD rows' loads in
  flight (AHEAD >= the strip's input rows issues them all up front, as a copy kernel would). The shifted
  window columns need no shared memory and no barriers: the vector splits into even and odd columns in
  registers, and the column left (right) of the group is the neighbour lane's loaded unit (a warp-local
  tl.gather, SHFL.IDX on sm_90; loads only at a warp's edge lanes) or, where whole warps of items do not
  apply, a scalar load of the neighbour's vector. WORDS (bf16, even W): rows load as 32-bit words, each
  half unpacked to fp32 by one shift or mask.
- "rows": ROWS whole output rows per program (rows may span planes), each padded to OWP = a power of 2
  columns, for stride 1 or 2 along W. The input columns 0 .. SW*OWP - 1 of each window row are one
  contiguous load (16-byte vectors: W and the row stride are constexprs), folded over the window rows in
  registers; for SW = 2 a reshape + split gives the even and odd columns, and a column m outputs away
  (e.g. 2*ow - 1 for k3 p1) is a tl.gather of the folded row. For stride 1 along W (where "groups" does not
  apply) a strip of ROWS output rows of one plane walks its input rows once instead (each loaded once and
  folded along W once, output row r the fold of the last KH folded rows), STRIPS strips a program.
- otherwise (stride > 2 along W, or very wide rows): a flat kernel over all outputs, XBLOCK a program; plane
  sizes are constexprs, so the per-element div/mod compiles to multiply-shift, stride-2 window columns
  load as aligned (even, odd) pairs, and at strides past 2 each window row loads as one tile of its columns
  (adjacent windows' columns one run of addresses, as KernelBench's 11x11 average pool at stride 11 reads).
"""

import torch
import triton
import triton.language as tl
from torch import nn

from corpus.kernels.pool2d.groups import _group_cols, _launch_groups, _max_or_sum, _window_out

TUNABLES = {
    "LAYOUT": "rows",  # windows of stride 2 along W: "rows" or "groups"
    "LAYOUT_STRIDE1": "groups",  # windows of stride 1 along W: "groups" or "rows"
    "XBLOCK": 1024,  # flat: outputs per program
    "num_warps_flat": 8,
    "ROWS": 8,  # rows: output rows per program (capped at 64 loaded values a thread per window row); strips
    # of stride-1 rows and groups: output rows a strip
    "num_warps_rows": 4,
    "STRIPS": 8,  # stride-1 rows: strips (ROWS-row runs of a plane) per program; 0 = one 16-byte load a thread
    "GROUP_V": 4,  # groups: input columns a thread loads a row: 0 = one 16-byte vector, 4 = 4 columns
    "GROUPS": 128,  # groups: (strip, column group) items a block, a power of 2
    "AHEAD": 10,  # groups: input rows whose loads are in flight (>= the strip's input rows: all up front)
    "WORDS": 1,  # groups, bf16: load 32-bit words, unpacking each half by one shift or mask
    "num_warps_groups": 4,
}


@triton.jit
def _max_nan(a, b):
    """max that keeps a NaN, as PyTorch's pooling does (also a reduction's combine function)."""
    return tl.where((b > a) | (b != b), b, a)  # noqa: PLR0124 - b != b is the NaN test


@triton.jit
def _fold(acc, v, IS_MAX: tl.constexpr):
    if IS_MAX:
        acc = _max_nan(acc, v)
    else:
        acc += v
    return acc


@triton.jit
def _pool2d_flat_kernel(
    x_ptr, y_ptr, total,
    H: tl.constexpr, W: tl.constexpr, OH: tl.constexpr, OW: tl.constexpr,
    KH: tl.constexpr, KW: tl.constexpr, SH: tl.constexpr, SW: tl.constexpr, PH: tl.constexpr,
    PW: tl.constexpr, IS_MAX: tl.constexpr, PAIR: tl.constexpr, M_LO: tl.constexpr, M_HI: tl.constexpr,
    XBLOCK: tl.constexpr, INT64: tl.constexpr, KWP: tl.constexpr,
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
    if KWP > 1:
        # SW > 2: a window row is one (XBLOCK, KWP) tile, lanes along the window first, so a warp reads
        # adjacent windows' columns as one run instead of KW loads strided by SW elements each; the rows
        # loop is not unrolled (unrolled, KH tiles' loads in flight spilled at 11x11 on sm_90)
        kk = tl.arange(0, KWP)
        iw = (ow * SW - PW)[:, None] + kk[None, :]
        col_ok = (kk[None, :] < KW) & (iw >= 0) & (iw < W)
        for kh in range(KH):
            ih = oh * SH - PH + kh
            row_ok = mask & (ih >= 0) & (ih < H)
            ok = row_ok[:, None] & col_ok
            v = tl.load((base + ih * W)[:, None] + iw, mask=ok, other=fill).to(tl.float32)
            if IS_MAX:
                acc = _fold(acc, tl.reduce(v, 1, _max_nan), IS_MAX)
            else:
                acc += tl.sum(v, axis=1)
    else:
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
    PW: tl.constexpr, IS_MAX: tl.constexpr, ROWS: tl.constexpr, OWP: tl.constexpr, INT64: tl.constexpr,
):
    # ROWS whole output rows (row g = plane * OH + oh, rows may span planes), OWP >= OW columns each.
    # Window column kw of output ow is input column SW*ow + d, d = kw - PW = SW*m + p (0 <= p < SW):
    # lane p of the output's own SW-wide column group, shifted by m outputs.
    # The rows' input columns 0 .. SW*OWP - 1 are read by one contiguous load per window row (16-byte
    # vectors), folded over the window rows, and for SW = 2 split into even/odd columns (the m = 0 taps);
    # each m != 0 tap is then a tl.gather of that folded row.
    if INT64:
        g0 = tl.program_id(0).to(tl.int64) * ROWS
    else:
        g0 = tl.program_id(0) * ROWS
    fill: tl.constexpr = float("-inf") if IS_MAX else 0.0
    i = tl.arange(0, ROWS * OWP)  # output position within the program
    g = g0 + i // OWP
    ow = i % OWP
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
    INT64: tl.constexpr,
):
    # STRIPS strips per program; strip q = plane * NB + b is output rows b*ROWS .. b*ROWS + ROWS - 1 of one
    # plane (the last strip of a plane is masked past OH). The strip walks its (ROWS-1)*SH + KH input rows
    # once, top to bottom: each row is loaded and folded along W once, and output row r is the fold of the
    # last KH folded rows when row r*SH + KH - 1 arrives (separable: KW-1 + KH-1 ops an output, not KH*KW-1).
    # KH <= 4 (the launcher checks): the last KH-1 folded rows are carried in p1 .. p3.
    NB: tl.constexpr = (OH + ROWS - 1) // ROWS
    SPAN: tl.constexpr = SW * OWP  # one contiguous load of input columns 0 .. SPAN - 1
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
        if t >= KH - 1 and (t - KH + 1) % SH == 0:
            r = (t - KH + 1) // SH
            acc = _window_out(h, p1, p2, p3, KH, KW, IS_MAX)
            tl.store(out_ptr + r * OW, acc.to(y_ptr.dtype.element_ty), mask=out_ok & (oh0 + r < OH))
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
    """"rows": ROWS output rows per program (at most span_cap loaded values per window row)."""
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
        ROWS=rows, OWP=owp, INT64=int64, num_warps=t["num_warps_rows"],
    )


def _launch_shared_rows(x: torch.Tensor, y: torch.Tensor, is_max: bool, k: tuple, s: tuple, p: tuple, owp: int,
                        span_cap: int) -> None:
    """"rows" for stride 1 along W: strips of ROWS output rows of one plane, STRIPS strips per program."""
    t = TUNABLES
    n, c, h, w = x.shape
    oh, ow = y.shape[2:]
    rows = max(1, min(t["ROWS"], oh))  # a loop count, not a block size: any value
    strips_total = n * c * triton.cdiv(oh, rows)
    span = s[1] * owp
    strips = t["STRIPS"] or max(1, 16 // x.element_size() * 32 * t["num_warps_rows"] // span)
    # at most 16 loaded values a thread a row: the strip carries 4 loaded and 3 folded rows in registers (1/42's
    # 512-wide planes pad to 1024 columns; 8 strips of them spilled, 32.8 ms against the lowering's 4.3)
    strips = max(1, min(strips, triton.next_power_of_2(strips_total), span_cap // span,
                        16 * 32 * t["num_warps_rows"] // span))
    # offsets reach past the last plane by up to `strips` strips plus one plane (masked), in both tensors
    int64 = max(x.numel(), y.numel()) + (strips + 2) * max(h * w, oh * ow) >= 2**31
    _pool2d_shared_rows_kernel[(triton.cdiv(strips_total, strips),)](
        x, y, strips_total,
        H=h, W=w, OH=oh, OW=ow, KH=k[0], KW=k[1], SH=s[0], SW=s[1], PH=p[0], PW=p[1], IS_MAX=is_max,
        ROWS=rows, STRIPS=strips, OWP=owp, INT64=int64, num_warps=t["num_warps_rows"],
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
    layout = t["LAYOUT_STRIDE1"] if sw == 1 else t["LAYOUT"]
    if layout not in ("rows", "groups"):
        raise ValueError(f"pool2d: TUNABLES layout {layout!r} (stride {sw} along W) is not 'rows' or 'groups'")
    x = x.contiguous()
    if layout == "groups":
        v = _group_cols(x, (kh, kw), (sh, sw), (ph, pw), t)
        if v:
            _launch_groups(x, y, kind == "max", (kh, kw), (sh, sw), (ph, pw), v, t)
            return y
    # "rows", and "groups" where it does not apply
    owp = _rows_owp(ow, kw, sw, pw)
    span_cap = 64 * 32 * t["num_warps_rows"]  # loaded values per window row: <= 64 a thread
    if sw == 1 and owp <= span_cap and kh <= 4:
        _launch_shared_rows(x, y, kind == "max", (kh, kw), (sh, sw), (ph, pw), owp, span_cap)
        return y
    if sw in (1, 2) and sw * owp <= span_cap:
        _launch_rows(x, y, kind == "max", (kh, kw), (sh, sw), (ph, pw), owp, span_cap)
        return y
    # stride > 2 along W, or very wide rows: flat
    # stride > 2: each window row a tile of KWP columns, 2048 values a program (8 a thread at 8 warps: 64
    # registers on sm_90 at 11x11, against 144 at 4096)
    kwp = triton.next_power_of_2(kw) if sw > 2 and kw > 1 else 1
    xblock = min(t["XBLOCK"], max(16, 2048 // kwp), triton.next_power_of_2(y.numel()))
    _pool2d_flat_kernel[(triton.cdiv(y.numel(), xblock),)](
        x, y, y.numel(),
        H=h, W=w, OH=oh, OW=ow, KH=kh, KW=kw, SH=sh, SW=sw, PH=ph, PW=pw, IS_MAX=kind == "max",
        PAIR=sw == 2, M_LO=(-pw) // 2, M_HI=(kw - 1 - pw) // 2, XBLOCK=xblock,
        INT64=x.numel() + xblock * kwp >= 2**31, KWP=kwp, num_warps=t["num_warps_flat"],
    )
    return y


class ModelNew(nn.Module):
    """Same constructor as the pool2d specs' Model: (kind, kernel_size, stride, padding)."""

    def __init__(self, kind: str, kernel_size: int, stride: int, padding: int = 0):
        super().__init__()
        self.kind, self.kernel_size, self.stride, self.padding = kind, kernel_size, stride, padding

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return pool2d(x, self.kind, self.kernel_size, self.stride, self.padding)
