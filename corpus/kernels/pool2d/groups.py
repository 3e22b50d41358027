"""The "groups" layout of the pool2d family (see kernel.py): a thread walks a strip of input rows of one
column group, loading each row once and folding it along W in registers, the columns beside the group from
the neighbour lanes. Inlined into the family's candidate source (ingest/bundle.py); kernel.py passes its
TUNABLES in as `t`.
"""

import torch
import triton
import triton.language as tl


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


def _group_cols(x: torch.Tensor, k: tuple, s: tuple, p: tuple, t: dict) -> int:
    """"groups": input columns a thread loads a row (one 16-byte vector, or 4 with GROUP_V 4), or 0
    where the layout does not apply: stride 1 or 2 along W, window columns within -1 .. SW of the output's
    own (PW <= 1), KH <= 4 (carried rows), V in (4, 8) (the register shifts of _shift_in). Wider groups
    (two vectors a row) made triton move the split through shared memory."""
    v = 4 if t["GROUP_V"] == 4 else 16 // x.element_size()
    fits = s[1] in (1, 2) and p[1] <= 1 and k[1] - p[1] - 1 <= s[1] and k[0] <= 4 and v in (4, 8)
    return v if fits else 0


def _launch_groups(x: torch.Tensor, y: torch.Tensor, is_max: bool, k: tuple, s: tuple, p: tuple, v: int,
                   t: dict) -> None:
    """"groups": one thread a (strip, V-column group); GROUPS items a block, one block a program."""
    n, c, h, w = x.shape
    oh, ow = y.shape[2:]
    rows = max(1, min(t["ROWS"], oh))  # a loop count: any value
    items = n * c * triton.cdiv(oh, rows) * triton.cdiv(ow, v // s[1])
    block = max(1, min(t["GROUPS"], triton.next_power_of_2(items)))
    blocks = triton.cdiv(items, block)
    # masked items of the last block reach one plane (plus a row segment) past each tensor's end
    int64 = max(x.numel(), y.numel()) + (block + 2) * max(h * w, oh * ow) >= 2**31
    # bf16 as 32-bit words: every row starts on a word (even W, word-aligned tensor)
    words = bool(t["WORDS"]) and x.dtype == torch.bfloat16 and w % 2 == 0 and x.data_ptr() % 4 == 0
    # halo units from neighbour lanes: whole warps of items, 2 or 4 units a group (_end_units); else loads
    shfl = block % 32 == 0 and v // (2 if words else 1) in (2, 4)
    # AHEAD past the strip's input rows loads them all up front, as AHEAD = rows does: one compiled kernel
    ahead = min(t["AHEAD"], (rows - 1) * s[0] + k[0])
    _pool2d_groups_kernel[(blocks,)](
        x, y, items, blocks,
        H=h, W=w, OH=oh, OW=ow, KH=k[0], KW=k[1], SH=s[0], SW=s[1], PH=p[0], PW=p[1], IS_MAX=is_max,
        ROWS=rows, V=v, N=block, AHEAD=ahead, WORDS=words, SHFL=shfl, INT64=int64, num_warps=t["num_warps_groups"],
        num_stages=1,
    )
