"""Batch norm in training mode over (N, C, *spatial): batch statistics per channel, affine, and the
running-statistics update that nn.BatchNorm2d makes in training (momentum, unbiased variance).

STRATEGY "auto" (the default) takes "ring" on sm_90 for x larger than L2 where its launch fits, else
"two_kernel".
- "two_kernel": every channel's statistics need all of its N * HW elements before any output, so two
  kernels. _batchnorm_stats_kernel (grid C * SPLIT): program (c, s) reads planes n = s, s + SPLIT, ... of
  channel c and writes its (count, mean, M2) (Chan's merge over blocks: no sum-of-squares cancellation).
  _batchnorm_apply_kernel (grid C * N * blocks) merges the SPLIT partials of its channel (a few hundred
  bytes, L2-resident) and writes y = (x - mean) * rstd * w + b; the first program of a channel also updates
  running_mean / running_var (and channel 0's, num_batches_tracked). x is read twice and y written once
  (1.5x the minimum once x is larger than L2); the stats kernel walks channels from last to first and the
  apply kernel from first to last, so the channels read last are still in L2 when the second starts.
- "ring" (Gluon, a CUDA GPU): one persistent kernel reads x once. The channel-major order of TILE-value
  tiles (a tile is a block of one plane, so one channel: one shift and one scale) is cut into shares of
  SHARE tiles, share j belonging to program j % programs in step j // programs. Each step is one loop over
  the share's tiles: iteration t loads a tile of stage p from DRAM (a tile ahead, into registers) into
  per-lane sums of x - K (K the channel's first value) and stores it into slot t % RING of a shared-memory
  ring of LAG x SHARE tiles, and writes y for the tile the same threads stored RING iterations earlier
  (stage p - LAG), loaded back from that slot: L2 carries x once and y once, as a copy does. Where a
  share's run in a channel ends, the lane sums are reduced and published as one 64-bit word tagged with
  the launch's parity (an epoch workspace: no fill kernel, no counter, no fence); where the applied tile's
  channel changes, the program polls that channel's words (written LAG steps before: normally no wait). A
  poll that runs out (a program not resident) reads the channel from x. The program applying a channel's
  first tile updates its running statistics. Repeat calls of one problem relaunch the compiled kernel
  through a launch plan (_RingPlan).
"""

import torch
import triton
import triton.language as tl
from torch import nn

from corpus.kernels._shared.coop import _MAX_SPIN_GPU, _epoch_words
from corpus.kernels._shared.device import _capability, _launch_hooks_idle, _num_sms

try:  # Gluon (triton >= 3.5: explicit shared memory) for STRATEGY "ring"; without it two_kernel runs
    from triton.experimental import gluon
    from triton.experimental.gluon import language as gl
except ImportError:  # pragma: no cover - older triton
    gluon = None

TUNABLES = {
    "STRATEGY": "auto",  # "auto", "two_kernel" or "ring"
    "SPLIT": 64,  # two_kernel: programs per channel in the stats kernel
    "BLOCK_STATS": 4096,
    "num_warps_stats": 8,
    "MAX_BLOCK_APPLY": 4096,  # two_kernel: apply kernel's elements of one plane per program
    "num_warps_apply": 8,
    # ring: tiles of RING_TILE values (power of 2, a block of one plane, at most the plane's next power of 2),
    # shares of RING_SHARE_BYTES of x a program and step (whole tiles, at least one), the apply RING_LAG steps
    # behind the reads (raised where a channel spans more steps), RING_PROGRAMS_PER_SM persistent programs (0:
    # 5 for tiles of 8 KiB or less, else 4), the DRAM reads with the L2 policy RING_EVICT
    "RING_TILE": 4096,
    "RING_SHARE_BYTES": 16384,
    "RING_LAG": 2,
    "RING_PROGRAMS_PER_SM": 0,
    "RING_EVICT": "evict_last",
    "num_warps_ring": 4,
    "RING_LAUNCH_PLANS": True,  # ring: a repeat call of one problem relaunches the kernel the first call compiled
}
# what a ring launch plan depends on besides the tensors (a change of any makes a new plan)
_RING_PLAN_TUNABLES = ("STRATEGY", "RING_TILE", "RING_SHARE_BYTES", "RING_LAG", "RING_PROGRAMS_PER_SM", "RING_EVICT",
                       "num_warps_ring")
_RING_PLANS: dict = {}  # _ring_key -> _RingPlan
_MAX_RING_PLANS = 32
_AUTO_RING_MIN_BYTES = 64 << 20  # "auto": below this x stays in L2, where two_kernel's second read is cheap
_SHARED_BYTES_PER_SM = 227 * 1024  # H100/H200: what one SM's resident programs may use together
_EVICT_POLICIES = ("", "evict_first", "evict_last")  # what tl.load / tl.store take ("" = normal)
_RING_SCRATCH_BYTES = 1024  # "ring": shared memory a program takes beside its ring (reduction scratch)


@triton.jit
def _batchnorm_stats_kernel(
    x_ptr, cnt_ptr, mean_ptr, m2_ptr, n_batch, n_channels, hw,
    SPLIT: tl.constexpr, BLOCK: tl.constexpr,
):
    pid = tl.program_id(0)
    c = n_channels - 1 - pid // SPLIT  # last channel first: the apply kernel starts on what is still in L2
    s = pid % SPLIT
    offs = tl.arange(0, BLOCK)
    count = 0.0
    mean = 0.0
    m2 = 0.0
    for n in range(s, n_batch, SPLIT):
        plane = x_ptr + (tl.cast(n, tl.int64) * n_channels + c) * hw
        for start in range(0, hw, BLOCK):
            mask = start + offs < hw
            x = tl.load(plane + start + offs, mask=mask, other=0.0).to(tl.float32)
            n_b = tl.sum(mask.to(tl.float32), axis=0)
            mean_b = tl.sum(x, axis=0) / n_b
            d = tl.where(mask, x - mean_b, 0.0)
            m2_b = tl.sum(d * d, axis=0)
            total = count + n_b
            delta = mean_b - mean
            mean = mean + delta * (n_b / total)
            m2 = m2 + m2_b + delta * delta * (count * n_b / total)
            count = total
    out = c * SPLIT + s
    tl.store(cnt_ptr + out, count)
    tl.store(mean_ptr + out, mean)
    tl.store(m2_ptr + out, m2)


@triton.jit
def _batchnorm_apply_kernel(
    x_ptr, w_ptr, b_ptr, y_ptr, cnt_ptr, mean_ptr, m2_ptr, run_mean_ptr, run_var_ptr, batches_ptr,
    n_batch, n_channels, hw, blocks_per_plane, eps, momentum,
    SPLIT: tl.constexpr, BLOCK: tl.constexpr, UPDATE_RUNNING: tl.constexpr,
):
    pid = tl.program_id(0)
    per_channel = n_batch * blocks_per_plane
    c = pid // per_channel  # first channel first
    rem = pid % per_channel
    n = rem // blocks_per_plane
    blk = rem % blocks_per_plane
    # merge the SPLIT partial statistics of channel c
    parts = c * SPLIT + tl.arange(0, SPLIT)
    cnt_p = tl.load(cnt_ptr + parts)
    mean_p = tl.load(mean_ptr + parts)
    m2_p = tl.load(m2_ptr + parts)
    count = tl.sum(cnt_p, axis=0)
    mean = tl.sum(cnt_p * mean_p, axis=0) / count
    d = mean_p - mean
    m2 = tl.sum(m2_p + cnt_p * d * d, axis=0)
    var = m2 / count
    rstd = tl.rsqrt(var + eps)
    w = tl.load(w_ptr + c).to(tl.float32)
    b = tl.load(b_ptr + c).to(tl.float32)
    scale = rstd * w
    shift = b - mean * scale
    offs = blk * BLOCK + tl.arange(0, BLOCK)
    mask = offs < hw
    base = (tl.cast(n, tl.int64) * n_channels + c) * hw
    x = tl.load(x_ptr + base + offs, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + base + offs, (x * scale + shift).to(y_ptr.dtype.element_ty), mask=mask)
    if UPDATE_RUNNING:  # noqa: SIM102 - a constexpr branch around a runtime one
        if rem == 0:
            _update_running(run_mean_ptr, run_var_ptr, batches_ptr, c, count, mean, m2, momentum)


@triton.jit
def _update_running(run_mean_ptr, run_var_ptr, batches_ptr, c, count, mean, m2, momentum):
    """nn.BatchNorm2d's running statistics of channel c (unbiased variance); channel 0 counts the batch."""
    rm = tl.load(run_mean_ptr + c).to(tl.float32)
    rv = tl.load(run_var_ptr + c).to(tl.float32)
    unbiased = m2 / tl.maximum(count - 1.0, 1.0)
    tl.store(run_mean_ptr + c, ((1.0 - momentum) * rm + momentum * mean).to(run_mean_ptr.dtype.element_ty))
    tl.store(run_var_ptr + c, ((1.0 - momentum) * rv + momentum * unbiased).to(run_var_ptr.dtype.element_ty))
    if c == 0:
        tl.store(batches_ptr, tl.load(batches_ptr) + 1)  # num_batches_tracked


if gluon is not None:

    @gluon.jit
    def _ring_tile(u, n_units, n_channels, hw, PER_CHANNEL: gl.constexpr, SEGS: gl.constexpr, TILE: gl.constexpr):
        """Tile u in channel-major order (channel, plane, TILE-value block of the plane): (channel, first element,
        first column in the plane, 0 <= u < n_units). A tile outside the tensor gives its nearest real tile's place
        (its loads stay in bounds; its sums are never published, its store is off)."""
        live = (u >= 0) & (u < n_units)
        v = gl.minimum(gl.maximum(u, 0), n_units - 1)
        c = v // PER_CHANNEL
        rest = v - c * PER_CHANNEL
        n = rest // SEGS
        col = (rest - n * SEGS) * TILE
        return c, (n.to(gl.int64) * n_channels + c) * hw + col, col, live

    @gluon.jit
    def _ring_load(x_ptr, base, col, inner, hw, EVEN: gl.constexpr, EVICT: gl.constexpr):
        if EVEN:  # no tile cuts a plane: no masks
            return gl.load(x_ptr + base + inner, eviction_policy=EVICT)
        return gl.load(x_ptr + base + inner, mask=col + inner < hw, other=0.0, eviction_policy=EVICT)

    @gluon.jit
    def _ring_add2(a0, a1, b0, b1):
        return a0 + b0, a1 + b1

    @gluon.jit
    def _ring_add3(a0, a1, a2, b0, b1, b2):
        return a0 + b0, a1 + b1, a2 + b2

    @gluon.jit
    def _ring_tagged_sums(ptrs, mask, tag):
        """(sum of low floats, sum of high floats, words not in) of the tagged words at ptrs: one reduction tree."""
        words = gl.load(ptrs, mask=mask, other=tag, volatile=True) ^ tag
        low = (words & 0xFFFFFFFF).to(gl.int32).to(gl.float32, bitcast=True)
        high = (words >> 32).to(gl.int32).to(gl.float32, bitcast=True)
        return gl.reduce((low, high, (words < 0).to(gl.float32)), 0, _ring_add3)

    @gluon.jit
    def _ring_publish(word_ptr, s, q, tag):
        """(s, q) as one 64-bit word, q's sign bit cleared (q is never negative), then set to the launch's tag: a
        reader sees all of it or the -1 fill, so no counter and no release fence."""
        lo = s.to(gl.int32, bitcast=True).to(gl.int64) & 0xFFFFFFFF
        hi = (q.to(gl.int32, bitcast=True) & 0x7FFFFFFF).to(gl.int64)
        gl.atomic_xchg(word_ptr, (hi << 32) | lo | tag, sem="relaxed")

    @gluon.jit
    def _ring_sums_from_x(x_ptr, c, k, n_batch, n_channels, hw, num_warps: gl.constexpr):
        """Channel c's sums of x - k and (x - k)^2 read from x: the way out when a peer's word never came."""
        BLOCK: gl.constexpr = 128 * num_warps
        layout: gl.constexpr = gl.BlockedLayout([4], [32], [num_warps], [0])
        offs = gl.arange(0, BLOCK, layout=layout)
        s = gl.zeros([BLOCK], gl.float32, layout)
        q = gl.zeros([BLOCK], gl.float32, layout)
        for n in range(n_batch):
            plane = x_ptr + (n.to(gl.int64) * n_channels + c) * hw
            for start in range(0, hw, BLOCK):
                m = start + offs < hw
                d = gl.where(m, gl.load(plane + start + offs, mask=m, other=0.0).to(gl.float32) - k, 0.0)
                s += d
                q += d * d
        return gl.sum(s, axis=0), gl.sum(q, axis=0)

    @gluon.jit
    def _ring_channel_stats(x_ptr, slot_ptr, tag, c, n_batch, n_channels, hw, n_shares, words_per_share, count,
                            max_spin, PER_CHANNEL: gl.constexpr, SHARE: gl.constexpr, GW: gl.constexpr,
                            num_warps: gl.constexpr):
        """(mean, var) of channel c from the words of the shares meeting it, polled until all are in; after
        max_spin polls (a program not resident) from x itself."""
        layout: gl.constexpr = gl.BlockedLayout([1], [32], [num_warps], [0])
        first = c * PER_CHANNEL
        j = first // SHARE + gl.arange(0, GW, layout=layout)
        meets = (j < n_shares) & (j * SHARE < first + PER_CHANNEL)
        # a share's words are its channels in order: c's is c less the share's first channel
        ptrs = slot_ptr + j * words_per_share + c - j * SHARE // PER_CHANNEL
        k = gl.load(x_ptr + c.to(gl.int64) * hw).to(gl.float32)  # issued before polling: not in its wake
        s, q, missing = _ring_tagged_sums(ptrs, meets, tag)
        spins = 0
        while (missing > 0) & (spins < max_spin):
            s, q, missing = _ring_tagged_sums(ptrs, meets, tag)
            spins += 1
        if missing > 0:
            s, q = _ring_sums_from_x(x_ptr, c, k, n_batch, n_channels, hw, num_warps)
        d = s / count
        return k + d, gl.maximum(q / count - d * d, 0.0)

    @gluon.jit
    def _batchnorm_ring_kernel(
        x_ptr, w_ptr, b_ptr, y_ptr, slot_ptr, ticket_ptr, run_mean_ptr, run_var_ptr, batches_ptr,
        n_batch, n_channels, hw, n_units, n_shares, words_per_share, n_iters, count, eps, momentum, max_spin,
        PER_CHANNEL: gl.constexpr, SHARE: gl.constexpr, SEGS: gl.constexpr, ROWS: gl.constexpr, LANES: gl.constexpr,
        VEC: gl.constexpr, GW: gl.constexpr, LAG: gl.constexpr, EVEN: gl.constexpr, EVICT: gl.constexpr,
        UPDATE_RUNNING: gl.constexpr, EPOCH: gl.constexpr, num_warps: gl.constexpr,
    ):
        # the apply's tile comes from a shared-memory ring instead of a re-read from L2: the tile read
        # in iteration t goes to slot t % RING, and iteration t + RING applies it (u - LAG * per_step is this
        # program's tile of RING iterations ago). The same thread stores and loads the same values in one layout.
        TILE: gl.constexpr = ROWS * LANES
        RING: gl.constexpr = LAG * SHARE
        # a thread holds all ROWS of its VEC-wide column strip: per-lane sums over rows need no shuffles
        layout: gl.constexpr = gl.BlockedLayout([ROWS, VEC], [1, 32], [1, num_warps], [1, 0])
        lane_layout: gl.constexpr = gl.SliceLayout(0, layout)
        ring = gl.allocate_shared_memory(x_ptr.dtype.element_ty, [RING, ROWS, LANES],
                                         gl.SwizzledSharedLayout(1, 1, 1, order=[1, 0]))
        inner = gl.expand_dims(gl.arange(0, ROWS, layout=gl.SliceLayout(1, layout)), 1) * LANES + \
            gl.expand_dims(gl.arange(0, LANES, layout=lane_layout), 0)
        g = gl.program_id(0)
        n_programs = gl.num_programs(0)
        per_step = n_programs * SHARE
        lag_tiles = LAG * per_step
        c_n, base_n, col_n, _live0 = _ring_tile(g * SHARE, n_units, n_channels, hw, PER_CHANNEL, SEGS, TILE)
        k = gl.load(x_ptr + c_n.to(gl.int64) * hw).to(gl.float32)  # K: the channel's first value (a shift)
        x_next = _ring_load(x_ptr, base_n, col_n, inner, hw, EVEN, EVICT)
        ticket = 0
        if EPOCH:  # after the first loads: its round trip overlaps them
            ticket = gl.atomic_add(ticket_ptr, 1, sem="relaxed")
        tag = ((ticket // n_programs) & 1).to(gl.int64) << 63
        acc_s = gl.zeros([LANES], gl.float32, lane_layout)
        acc_q = gl.zeros([LANES], gl.float32, lane_layout)
        c_apply = -1
        scale = 0.0
        shift = 0.0
        for t in range(n_iters):
            step = t // SHARE
            i = t - step * SHARE
            u = (step * n_programs + g) * SHARE + i
            u_next = gl.where(i + 1 < SHARE, u + 1, u - i + per_step)
            x_r = x_next
            c_n, base_n, col_n, _live_next = _ring_tile(u_next, n_units, n_channels, hw, PER_CHANNEL, SEGS, TILE)
            x_next = _ring_load(x_ptr, base_n, col_n, inner, hw, EVEN, EVICT)
            k_next = gl.load(x_ptr + c_n.to(gl.int64) * hw)
            slot = ring.index(t % RING)
            x_a = slot.load(layout)  # the tile read RING iterations ago (before that: never applied)
            slot.store(x_r)
            c_r, _base_r, col_r, live_r = _ring_tile(u, n_units, n_channels, hw, PER_CHANNEL, SEGS, TILE)
            d = x_r.to(gl.float32) - k
            if not EVEN:
                d = gl.where(col_r + inner < hw, d, 0.0)
            acc_s += gl.sum(d, axis=0)
            acc_q += gl.sum(d * d, axis=0)
            if live_r & ((i == SHARE - 1) | (u + 1 == (c_r + 1) * PER_CHANNEL)):  # the share's run in c_r ends
                word = slot_ptr + (step * n_programs + g) * words_per_share + c_r - (u - i) // PER_CHANNEL
                s_c, q_c = gl.reduce((acc_s, acc_q), 0, _ring_add2)
                _ring_publish(word, s_c, q_c, tag)
                acc_s = gl.zeros([LANES], gl.float32, lane_layout)
                acc_q = gl.zeros([LANES], gl.float32, lane_layout)
            k = k_next.to(gl.float32)
            u_a = u - lag_tiles
            c_a, base_a, col_a, live_a = _ring_tile(u_a, n_units, n_channels, hw, PER_CHANNEL, SEGS, TILE)
            if live_a & (c_a != c_apply):  # read LAG steps ago: its words are normally in
                w = gl.load(w_ptr + c_a).to(gl.float32)
                b = gl.load(b_ptr + c_a).to(gl.float32)
                mean, var = _ring_channel_stats(x_ptr, slot_ptr, tag, c_a, n_batch, n_channels, hw, n_shares,
                                                words_per_share, count, max_spin, PER_CHANNEL, SHARE, GW, num_warps)
                scale = gl.rsqrt(var + eps) * w
                shift = b - mean * scale
                if UPDATE_RUNNING:  # noqa: SIM102 - a constexpr branch around a runtime one
                    if u_a == c_a * PER_CHANNEL:  # the program applying the channel's first tile
                        rm = gl.load(run_mean_ptr + c_a).to(gl.float32)
                        rv = gl.load(run_var_ptr + c_a).to(gl.float32)
                        unbiased = var * count / gl.maximum(count - 1.0, 1.0)
                        gl.store(run_mean_ptr + c_a,
                                 ((1.0 - momentum) * rm + momentum * mean).to(run_mean_ptr.dtype.element_ty))
                        gl.store(run_var_ptr + c_a,
                                 ((1.0 - momentum) * rv + momentum * unbiased).to(run_var_ptr.dtype.element_ty))
                        if c_a == 0:
                            gl.store(batches_ptr, gl.load(batches_ptr) + 1)  # num_batches_tracked
                c_apply = c_a
            y = (x_a.to(gl.float32) * scale + shift).to(y_ptr.dtype.element_ty)
            gl.store(y_ptr + base_a + inner, y, mask=(col_a + inner < hw) & live_a, eviction_policy="evict_first")


def _running_args(running_mean, running_var, num_batches_tracked, stand_in: torch.Tensor) -> tuple:
    """(update, the three running-statistics arguments): without running statistics the kernel is compiled
    with UPDATE_RUNNING False and never reads them, so `stand_in` fills their places."""
    update = running_mean is not None and running_var is not None
    if update and num_batches_tracked is None:  # no counter kept (F.batch_norm): count into a scratch word
        num_batches_tracked = torch.zeros(1, dtype=torch.int64, device=stand_in.device)
    running = (running_mean, running_var, num_batches_tracked) if update else (stand_in,) * 3
    return update, running


def _ring_plan(x: torch.Tensor) -> tuple[dict | None, str]:
    """(the launch of STRATEGY "ring" for x (N, C, HW...), "") or (None, why it cannot run here)."""
    if TUNABLES["RING_EVICT"] not in _EVICT_POLICIES:
        raise ValueError(f"batchnorm: TUNABLES['RING_EVICT'] = {TUNABLES['RING_EVICT']!r}, expected one of "
                         f"{_EVICT_POLICIES}")
    if gluon is None or not x.is_cuda:
        return None, "needs a CUDA GPU and Gluon (triton >= 3.5)"
    n, c = x.shape[0], x.shape[1]
    return _ring_layout(n, c, x.numel() // (n * c), x.element_size(), _num_sms(x.device))


def _ring_layout(n: int, c: int, hw: int, esize: int, n_sms: int) -> tuple[dict | None, str]:
    """_ring_plan's arithmetic: tiles, shares, lag and programs, or why they do not fit: every program resident at
    once (they wait on each other: the ring and scratch in an SM's shared memory, at most 64 warps), int32 tile
    indices."""
    t = TUNABLES
    num_warps = t["num_warps_ring"]
    vec = max(1, 16 // esize)  # 16-byte accesses
    lanes = vec * 32 * num_warps
    tile = max(lanes, min(t["RING_TILE"], triton.next_power_of_2(hw)))
    segs = triton.cdiv(hw, tile)
    per_channel = n * segs
    n_units = c * per_channel
    if n_units * 2 >= 2**31:
        return None, f"{n_units} tiles do not fit int32 tile indices"
    tile_bytes = tile * esize
    per_sm = t["RING_PROGRAMS_PER_SM"] or (5 if tile_bytes <= 8192 else 4)
    n_programs = n_sms * per_sm
    share = max(1, min(t["RING_SHARE_BYTES"] // tile_bytes, triton.cdiv(n_units, n_programs)))
    # a channel of stage p must be all read (by every share meeting it) before step p + LAG applies it
    lag = max(t["RING_LAG"], 1 + triton.cdiv(per_channel - 1, share * n_programs))
    ring_bytes = lag * share * tile_bytes
    if per_sm * (ring_bytes + _RING_SCRATCH_BYTES) > _SHARED_BYTES_PER_SM or per_sm * num_warps > 64:
        return None, (f"{per_sm} programs an SM with {lag * share} ring slots of {tile_bytes} bytes each (lag {lag}) "
                      "do not fit one SM (the programs wait on each other: all must be resident)")
    n_shares = triton.cdiv(n_units, share)
    return {"n": n, "c": c, "hw": hw, "tile": tile, "rows": tile // lanes, "lanes": lanes, "vec": vec, "segs": segs,
            "per_channel": per_channel, "n_units": n_units, "per_sm": per_sm, "n_programs": n_programs,
            "share": share, "lag": lag, "n_shares": n_shares, "words": triton.cdiv(share - 1, per_channel) + 1,
            "num_warps": num_warps, "maxnreg": min(255, 65536 // (per_sm * num_warps * 32) // 8 * 8),
            "gw": max(triton.next_power_of_2(triton.cdiv(per_channel, share) + 1), 32 * num_warps)}, ""


def _batch_norm_ring(x, weight, bias, running_mean, running_var, num_batches_tracked, momentum, eps, key=None,
                     launch=None):
    """launch: _ring_plan(x)'s, where the caller has it already."""
    p, why = (launch, "") if launch is not None else _ring_plan(x)
    if p is None:
        raise ValueError(f"batchnorm: STRATEGY 'ring' for x of shape {tuple(x.shape)} ({x.dtype}, {x.device}): {why}")
    layout = ("ring", p["n_units"], p["per_channel"], p["share"])
    ticket, slots = _epoch_words(x.device, p["n_programs"], p["n_shares"] * p["words"], layout)
    y = torch.empty_like(x)
    update, running = _running_args(running_mean, running_var, num_batches_tracked, slots)
    grid = p["n_programs"]
    ints = (p["n"], p["c"], p["hw"], p["n_units"], p["n_shares"], p["words"],
            (triton.cdiv(p["n_shares"], grid) + p["lag"]) * p["share"])
    constexprs = {"PER_CHANNEL": p["per_channel"], "SHARE": p["share"], "SEGS": p["segs"], "ROWS": p["rows"],
                  "LANES": p["lanes"], "VEC": p["vec"], "GW": p["gw"], "LAG": p["lag"],
                  "EVEN": p["hw"] % p["tile"] == 0, "EVICT": TUNABLES["RING_EVICT"], "UPDATE_RUNNING": update,
                  "EPOCH": True}
    count = float(p["n"] * p["hw"])
    kernel = _batchnorm_ring_kernel[(grid,)](
        x, weight, bias, y, slots, ticket, *running, *ints, count, eps, momentum, _MAX_SPIN_GPU, **constexprs,
        num_warps=p["num_warps"], maxnreg=p["maxnreg"])
    # a plan needs a kernel its launcher can relaunch
    if key is not None and all(hasattr(kernel, a) for a in ("run", "function", "packed_metadata")):
        if len(_RING_PLANS) >= _MAX_RING_PLANS:
            _RING_PLANS.clear()
        _RING_PLANS[key] = _RingPlan(kernel, grid, slots, ticket, (*ints, count),
                                     {**constexprs, "num_warps": p["num_warps"]})
    return y


# Launch plans ("ring"). A launch through Gluon's JIT (binding 33 arguments, 12 of them constexprs) and the launch
# arithmetic above cost about as much host time as the kernel's 0.11-0.14 ms on the H200 (the harness's host_launch_ms
# 0.19-0.25 ms, benchmarks/results/library-h200-bn-ring{1,2,3}-*.json): where no GPU work is queued ahead the GPU
# waits for them. A repeat call of one problem takes the plan the first call left: its compiled kernel relaunched
# through the kernel's own launcher with the arguments that do not change.


class _RingPlan:
    """A compiled ring kernel and the fixed part of its launch, for calls with one _ring_key."""

    def __init__(self, kernel, grid: int, slots: torch.Tensor, ticket: torch.Tensor, scalars: tuple, fixed: dict):
        names = _batchnorm_ring_kernel.arg_names
        head = ["x_ptr", "w_ptr", "b_ptr", "y_ptr", "slot_ptr", "ticket_ptr", "run_mean_ptr", "run_var_ptr",
                "batches_ptr", "n_batch", "n_channels", "hw", "n_units", "n_shares", "words_per_share", "n_iters",
                "count", "eps", "momentum", "max_spin"]
        if names[:len(head)] != head or set(names[len(head):]) != set(fixed):
            raise RuntimeError(f"batchnorm: the ring kernel's arguments changed: {names}")
        self.kernel, self.grid, self.slots, self.ticket, self.scalars = kernel, grid, slots, ticket, scalars
        # the launcher takes every parameter in order, constexprs included (it passes over those)
        self.tail = tuple(fixed[name] for name in names[len(head):])
        # the JIT loads and launches a kernel on the current device (its function handle is that device's)
        self.device = triton.runtime.driver.active.get_current_device()

    def __call__(self, x, weight, bias, running: tuple, momentum: float, eps: float) -> torch.Tensor | None:
        """y, or None where the current device is not the plan's (the JIT path then runs)."""
        driver = triton.runtime.driver.active
        if driver.get_current_device() != self.device:
            return None
        y = torch.empty_like(x)
        k = self.kernel
        k.run(self.grid, 1, 1, driver.get_current_stream(self.device), k.function, k.packed_metadata, None, None,
              None, x, weight, bias, y, self.slots, self.ticket, *running, *self.scalars, float(eps), float(momentum),
              _MAX_SPIN_GPU, *self.tail)
        return y


def _ring_key(x, weight, bias, running_mean, running_var, num_batches_tracked) -> tuple:
    """Everything the ring path's launch and the JIT's specialisation depend on: x's shape, dtype and device, each
    pointer's dtype and 16-byte alignment, whether running statistics are kept, the stream (the epoch workspace is
    per stream), the current device and the TUNABLES that choose or compile the path."""
    tensors = (weight, bias, running_mean, running_var, num_batches_tracked)
    return (x.shape, x.dtype, x.device, x.data_ptr() % 16 == 0,
            tuple(None if t is None else (t.dtype, t.device, t.data_ptr() % 16 == 0) for t in tensors),
            torch.cuda.current_stream(x.device).cuda_stream, tuple(TUNABLES[name] for name in _RING_PLAN_TUNABLES))


def _auto_ring(x: torch.Tensor, launch: dict | None) -> bool:
    """"auto" takes "ring" where it was measured (sm_90: the H200) and its launch (_ring_plan's, None where it does
    not fit) fills at least 3/4 of each tile with the planes."""
    return (launch is not None and _capability(x.device)[0] == 9
            and launch["hw"] >= 0.75 * launch["segs"] * launch["tile"])


def batch_norm_train(x, weight, bias, running_mean, running_var, num_batches_tracked, momentum: float,
                     eps: float):
    if x.dim() < 2:
        raise ValueError(f"batch norm input must be (N, C, ...), got shape {tuple(x.shape)}")
    x = x.contiguous()
    n, c = x.shape[0], x.shape[1]
    hw = x.numel() // (n * c)
    if n * hw < 2:
        raise ValueError(f"batch norm in training needs more than one value per channel, got {tuple(x.shape)}")
    t = TUNABLES
    key = None
    large = x.numel() * x.element_size() > _AUTO_RING_MIN_BYTES
    if t["RING_LAUNCH_PLANS"] and x.is_cuda and (t["STRATEGY"] == "ring" or (t["STRATEGY"] == "auto" and large)):
        key = _ring_key(x, weight, bias, running_mean, running_var, num_batches_tracked)
        plan = _RING_PLANS.get(key)
        if plan is not None and _launch_hooks_idle():
            _, running = _running_args(running_mean, running_var, num_batches_tracked, plan.slots)
            y = plan(x, weight, bias, running, momentum, eps)
            if y is not None:
                return y
    strategy = t["STRATEGY"]
    launch = None
    if strategy == "auto":
        launch = _ring_plan(x)[0] if large else None
        strategy = "ring" if large and _auto_ring(x, launch) else "two_kernel"
    if strategy == "ring":
        return _batch_norm_ring(x, weight, bias, running_mean, running_var, num_batches_tracked, momentum, eps, key,
                                launch)
    if strategy != "two_kernel":
        raise ValueError(f"batchnorm: TUNABLES['STRATEGY'] = {t['STRATEGY']!r}, expected 'auto', 'two_kernel' or "
                         "'ring'")
    split = t["SPLIT"]
    parts = torch.empty((3, c * split), dtype=torch.float32, device=x.device)
    _batchnorm_stats_kernel[(c * split,)](
        x, parts[0], parts[1], parts[2], n, c, hw,
        SPLIT=split, BLOCK=t["BLOCK_STATS"], num_warps=t["num_warps_stats"],
    )
    y = torch.empty_like(x)
    block = min(triton.next_power_of_2(hw), t["MAX_BLOCK_APPLY"])
    blocks_per_plane = triton.cdiv(hw, block)
    update, running = _running_args(running_mean, running_var, num_batches_tracked, parts)
    _batchnorm_apply_kernel[(c * n * blocks_per_plane,)](
        x, weight, bias, y, parts[0], parts[1], parts[2], *running,
        n, c, hw, blocks_per_plane, eps, momentum,
        SPLIT=split, BLOCK=block, UPDATE_RUNNING=update, num_warps=max(1, min(t["num_warps_apply"], block // 256)),
    )
    return y


class ModelNew(nn.Module):
    """Same parameters and buffers (same order, same names) as the family's specs."""

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float = 0.1):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(num_features))
        self.bias = nn.Parameter(torch.randn(num_features))
        self.register_buffer("running_mean", torch.zeros(num_features))
        self.register_buffer("running_var", torch.ones(num_features))
        self.register_buffer("num_batches_tracked", torch.tensor(0, dtype=torch.long))
        self.eps, self.momentum = eps, momentum

    def forward(self, x):
        return batch_norm_train(x, self.weight, self.bias, self.running_mean, self.running_var,
                                self.num_batches_tracked, self.momentum, self.eps)
