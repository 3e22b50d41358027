"""Probe: the library's streamed batch norm with each program's tiles HELD in a shared-memory ring between their
statistics and their apply (Gluon), instead of re-read from L2, against the library kernel and eager on the H200.

Why: the library kernel ("streamed") reads a tile from DRAM into per-lane sums and re-reads it from L2 LAG steps
later to write y; L2 carries x three times (read, re-read, y) and 10.6% of bf16 x is read twice from DRAM
(re-reads that missed L2, `ncu-h200-20261201T1316Z.txt`). Session 11's Gluon probe (`gluon_batchnorm_probe.py`) held
x in shared memory through TMA, a box a plane, whole-channel stages and per-plane mbarriers, and was latency-bound.
This one keeps the streamed kernel as it is (persistent programs, stages split into shares of SHARE tiles, tiles
loaded into registers a tile ahead, per-lane shifted sums, one tagged 64-bit word per share-run, a poll per
channel change of the applied tile) and changes one thing: the tile read in iteration t is also stored into slot
t % RING of a ring of RING = LAG * SHARE tiles, and the apply of iteration t + RING loads it back from there (the
same thread wrote those values, in the same layout) before the slot takes the new tile. The DRAM read then needs no
evict_last (EVICT_R), and L2 carries x once and y once, as a copy does.

Usage (GPU box, repo root): python3 benchmarks/gpu/gluon_batchnorm_ring_probe.py [--out FILE] [--rounds R]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch
import triton
from probe_record import write_record  # this folder (see probe_record.py)
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

REPO = Path(__file__).resolve().parents[2]
MAX_SPIN = 200_000
_SMEM_PER_SM = 227 * 1024


@gluon.jit
def _tile(u, n_units, n_channels, hw, PER_CHANNEL: gl.constexpr, SEGS: gl.constexpr, TILE: gl.constexpr):
    """Tile u in channel-major order (channel, plane, TILE-value block of the plane): (channel, first element,
    first column in the plane, 0 <= u < n_units). Off tiles give the nearest real tile's place."""
    live = (u >= 0) & (u < n_units)
    v = gl.minimum(gl.maximum(u, 0), n_units - 1)
    c = v // PER_CHANNEL
    rest = v - c * PER_CHANNEL
    n = rest // SEGS
    col = (rest - n * SEGS) * TILE
    return c, (n.to(gl.int64) * n_channels + c) * hw + col, col, live


@gluon.jit
def _load(x_ptr, base, col, inner, hw, EVEN: gl.constexpr, EVICT: gl.constexpr):
    if EVEN:
        return gl.load(x_ptr + base + inner, eviction_policy=EVICT)
    return gl.load(x_ptr + base + inner, mask=col + inner < hw, other=0.0, eviction_policy=EVICT)


@gluon.jit
def _add3(a0, a1, a2, b0, b1, b2):
    return a0 + b0, a1 + b1, a2 + b2


@gluon.jit
def _tagged_sums(ptrs, mask, tag):
    """(sum of low floats, sum of high floats, words not in) of the tagged words at ptrs, one reduction tree."""
    words = gl.load(ptrs, mask=mask, other=tag, volatile=True) ^ tag
    low = (words & 0xFFFFFFFF).to(gl.int32).to(gl.float32, bitcast=True)
    high = (words >> 32).to(gl.int32).to(gl.float32, bitcast=True)
    return gl.reduce((low, high, (words < 0).to(gl.float32)), 0, _add3)


@gluon.jit
def _publish(word_ptr, s, q, tag):
    lo = s.to(gl.int32, bitcast=True).to(gl.int64) & 0xFFFFFFFF
    hi = (q.to(gl.int32, bitcast=True) & 0x7FFFFFFF).to(gl.int64)
    gl.atomic_xchg(word_ptr, (hi << 32) | lo | tag, sem="relaxed")


@gluon.jit
def _channel_stats(x_ptr, slot_ptr, tag, c, n_shares, words_per_share, hw, count, max_spin,
                   PER_CHANNEL: gl.constexpr, SHARE: gl.constexpr, GW: gl.constexpr, num_warps: gl.constexpr):
    """(mean, var) of channel c from the words of the shares meeting it, polled until all are in (NaN if not
    after max_spin polls: the probe reports it as a wrong output)."""
    wl: gl.constexpr = gl.BlockedLayout([1], [32], [num_warps], [0])
    first = c * PER_CHANNEL
    j = first // SHARE + gl.arange(0, GW, layout=wl)
    meets = (j < n_shares) & (j * SHARE < first + PER_CHANNEL)
    ptrs = slot_ptr + j * words_per_share + c - j * SHARE // PER_CHANNEL
    k = gl.load(x_ptr + c.to(gl.int64) * hw).to(gl.float32)
    s, q, missing = _tagged_sums(ptrs, meets, tag)
    spins = 0
    while (missing > 0) & (spins < max_spin):
        s, q, missing = _tagged_sums(ptrs, meets, tag)
        spins += 1
    d = s / count
    var = gl.maximum(q / count - d * d, 0.0)
    var = gl.where(missing > 0, -1.0, var)  # rsqrt(-1 + eps): NaN outputs
    return k + d, var


@gluon.jit
def _ring_kernel(x_ptr, w_ptr, b_ptr, y_ptr, slot_ptr, ticket_ptr, rm_ptr, rv_ptr, nbt_ptr,
                 n_channels, hw, n_units, n_shares, words_per_share, n_iters, count, eps, momentum, max_spin,
                 PER_CHANNEL: gl.constexpr, SHARE: gl.constexpr, SEGS: gl.constexpr, ROWS: gl.constexpr,
                 LANES: gl.constexpr, VEC: gl.constexpr, GW: gl.constexpr, LAG: gl.constexpr, EVEN: gl.constexpr,
                 EVICT_R: gl.constexpr, EVICT_Y: gl.constexpr, num_warps: gl.constexpr):
    TILE: gl.constexpr = ROWS * LANES
    RING: gl.constexpr = LAG * SHARE
    # a thread holds all ROWS of its VEC-wide column strip: per-lane sums over rows need no shuffles
    layout: gl.constexpr = gl.BlockedLayout([ROWS, VEC], [1, 32], [1, num_warps], [1, 0])
    lane_l: gl.constexpr = gl.SliceLayout(0, layout)
    ring = gl.allocate_shared_memory(x_ptr.dtype.element_ty, [RING, ROWS, LANES],
                                     gl.SwizzledSharedLayout(1, 1, 1, order=[1, 0]))
    inner = gl.expand_dims(gl.arange(0, ROWS, layout=gl.SliceLayout(1, layout)), 1) * LANES + \
        gl.expand_dims(gl.arange(0, LANES, layout=lane_l), 0)
    g = gl.program_id(0)
    P = gl.num_programs(0)
    per_step = P * SHARE
    lag_tiles = LAG * per_step  # the tile applied is this many before the tile read (this program's, RING ago)
    u = g * SHARE
    c_n, base_n, col_n, _live0 = _tile(u, n_units, n_channels, hw, PER_CHANNEL, SEGS, TILE)
    k = gl.load(x_ptr + c_n.to(gl.int64) * hw).to(gl.float32)
    x_next = _load(x_ptr, base_n, col_n, inner, hw, EVEN, EVICT_R)
    ticket = gl.atomic_add(ticket_ptr, 1, sem="relaxed")
    tag = ((ticket // P) & 1).to(gl.int64) << 63
    acc_s = gl.zeros([LANES], gl.float32, lane_l)
    acc_q = gl.zeros([LANES], gl.float32, lane_l)
    c_apply = -1
    scale = 0.0
    shift = 0.0
    for t in range(n_iters):
        step = t // SHARE
        i = t - step * SHARE
        u = (step * P + g) * SHARE + i
        u_next = gl.where(i + 1 < SHARE, u + 1, u - i + per_step)
        x_r = x_next
        c_n, base_n, col_n, _live_next = _tile(u_next, n_units, n_channels, hw, PER_CHANNEL, SEGS, TILE)
        x_next = _load(x_ptr, base_n, col_n, inner, hw, EVEN, EVICT_R)
        k_next = gl.load(x_ptr + c_n.to(gl.int64) * hw)
        slot = ring.index(t % RING)
        x_a = slot.load(layout)  # the tile read RING iterations ago (garbage before: never applied)
        slot.store(x_r)
        c_r, _base_r, col_r, live_r = _tile(u, n_units, n_channels, hw, PER_CHANNEL, SEGS, TILE)
        d = x_r.to(gl.float32) - k
        if not EVEN:
            d = gl.where(col_r + inner < hw, d, 0.0)
        acc_s += gl.sum(d, axis=0)
        acc_q += gl.sum(d * d, axis=0)
        if live_r & ((i == SHARE - 1) | (u + 1 == (c_r + 1) * PER_CHANNEL)):  # the share's run in c_r ends
            word = slot_ptr + (step * P + g) * words_per_share + c_r - (u - i) // PER_CHANNEL
            s_c, q_c = gl.reduce((acc_s, acc_q), 0, _add2)
            _publish(word, s_c, q_c, tag)
            acc_s = gl.zeros([LANES], gl.float32, lane_l)
            acc_q = gl.zeros([LANES], gl.float32, lane_l)
        k = k_next.to(gl.float32)
        c_a, base_a, col_a, live_a = _tile(u - lag_tiles, n_units, n_channels, hw, PER_CHANNEL, SEGS, TILE)
        if live_a & (c_a != c_apply):
            w = gl.load(w_ptr + c_a).to(gl.float32)
            b = gl.load(b_ptr + c_a).to(gl.float32)
            mean, var = _channel_stats(x_ptr, slot_ptr, tag, c_a, n_shares, words_per_share, hw, count, max_spin,
                                       PER_CHANNEL, SHARE, GW, num_warps)
            scale = gl.rsqrt(var + eps) * w
            shift = b - mean * scale
            if u - lag_tiles == c_a * PER_CHANNEL:  # the channel's first tile: its running statistics
                rm = gl.load(rm_ptr + c_a)
                rv = gl.load(rv_ptr + c_a)
                unbiased = var * count / gl.maximum(count - 1.0, 1.0)
                gl.store(rm_ptr + c_a, ((1.0 - momentum) * rm + momentum * mean).to(rm.dtype))
                gl.store(rv_ptr + c_a, ((1.0 - momentum) * rv + momentum * unbiased).to(rv.dtype))
                if c_a == 0:
                    gl.store(nbt_ptr, gl.load(nbt_ptr) + 1)
            c_apply = c_a
        y = (x_a.to(gl.float32) * scale + shift).to(y_ptr.dtype.element_ty)
        gl.store(y_ptr + base_a + inner, y, mask=(col_a + inner < hw) & live_a, eviction_policy=EVICT_Y)


@gluon.jit
def _add2(a0, a1, b0, b1):
    return a0 + b0, a1 + b1


_WORKSPACE: dict = {}


def ring_batch_norm(x, weight, bias, running_mean, running_var, num_batches_tracked, momentum, eps, SHARE=2, LAG=2,
                    PER_SM=4, num_warps=4, TILE=4096, EVICT_R="evict_first", EVICT_Y="evict_first"):
    n, c = x.shape[:2]
    hw = x.numel() // (n * c)
    esize = x.element_size()
    vec = 16 // esize  # 16-byte accesses
    lanes = vec * 32 * num_warps
    tile = max(lanes, min(TILE, triton.next_power_of_2(hw)))
    rows = tile // lanes
    segs = triton.cdiv(hw, tile)
    per_channel = n * segs
    n_units = c * per_channel
    sms = torch.cuda.get_device_properties(x.device).multi_processor_count
    programs = sms * PER_SM
    share = max(1, min(SHARE, triton.cdiv(n_units, programs)))
    n_shares = triton.cdiv(n_units, share)
    lag = max(LAG, 1 + triton.cdiv(per_channel - 1, share * programs))
    if PER_SM * lag * share * tile * esize > _SMEM_PER_SM - 8 * 1024:
        raise ValueError(f"ring_batch_norm: {PER_SM} programs of {lag * share} {tile}-value slots exceed an SM")
    words = triton.cdiv(share - 1, per_channel) + 1
    gw = max(triton.next_power_of_2(triton.cdiv(per_channel, share) + 1), 32 * num_warps)
    key = (str(x.device), n_units, per_channel, share, programs)  # everything that decides which words are written
    if key not in _WORKSPACE:
        ws = torch.full((1 + n_shares * words,), -1, dtype=torch.int64, device=x.device)
        ws[0] = 0
        _WORKSPACE[key] = ws
    ws = _WORKSPACE[key]
    y = torch.empty_like(x)
    _ring_kernel[(programs,)](
        x, weight, bias, y, ws[1:], ws[:1], running_mean, running_var, num_batches_tracked,
        c, hw, n_units, n_shares, words, (triton.cdiv(n_shares, programs) + lag) * share, float(n * hw), eps,
        momentum, MAX_SPIN, PER_CHANNEL=per_channel, SHARE=share, SEGS=segs, ROWS=rows, LANES=lanes, VEC=vec, GW=gw,
        LAG=lag, EVEN=hw % tile == 0, EVICT_R=EVICT_R, EVICT_Y=EVICT_Y, num_warps=num_warps,
        maxnreg=min(255, 65536 // (PER_SM * num_warps * 32) // 8 * 8))  # all programs resident: they wait on each other
    return y


_CASES = [
    # (shape, dtype, configs): the two library specs' shapes, then small ones for correctness (ragged, lag raised)
    ((256, 128, 64, 64), torch.bfloat16, [{}, {"EVICT_R": "evict_last"}, {"SHARE": 1}, {"SHARE": 3},
                                          {"LAG": 3}, {"PER_SM": 5}, {"PER_SM": 3, "SHARE": 4}]),
    ((64, 256, 56, 56), torch.float32, [{"PER_SM": 3}, {"PER_SM": 3, "EVICT_R": "evict_last"},
                                        {"PER_SM": 4, "SHARE": 1}, {"PER_SM": 2, "SHARE": 3},
                                        {"PER_SM": 3, "SHARE": 1, "LAG": 3}, {"PER_SM": 3, "TILE": 2048}]),
    ((3, 5, 8, 8), torch.bfloat16, [{}]),
    ((300, 7, 32, 32), torch.float32, [{}, {"SHARE": 3}]),
    ((6, 5, 9, 7), torch.float32, [{}]),
]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--cases", default="", help="JSON [[shape, dtype name, [config, ...]], ...] instead of "
                        "the built-in cases")
    args = parser.parse_args(argv)
    cases = [(tuple(shape), getattr(torch, dt), cfgs) for shape, dt, cfgs in json.loads(args.cases)] if args.cases \
        else _CASES
    sys.path.insert(0, str(REPO))
    from harness.spec import import_file

    lib = import_file(REPO / "corpus/kernels/batchnorm/kernel.py", "gluon_bn_ring_probe_lib")
    rows = []
    for shape, dtype, configs in cases:
        torch.manual_seed(0)
        x = (torch.randn(shape, device="cuda") * 2.0 + 1.0).to(dtype)
        c = shape[1]
        w, b = torch.randn(c, device="cuda"), torch.randn(c, device="cuda")
        ref_rm, ref_rv = torch.zeros(c, device="cuda"), torch.ones(c, device="cuda")
        ref = torch.nn.functional.batch_norm(x.float(), ref_rm, ref_rv, w, b, training=True, momentum=0.1, eps=1e-5)
        row = {"shape": list(shape), "dtype": str(dtype).removeprefix("torch.")}
        calls = {}
        for cfg in configs:
            name = "ring_" + ("_".join(f"{k}{v}" for k, v in cfg.items()) or "default")
            state = [torch.zeros(c, device="cuda"), torch.ones(c, device="cuda"), torch.zeros((), dtype=torch.long,
                                                                                            device="cuda")]
            try:
                y = ring_batch_norm(x, w, b, *state, 0.1, 1e-5, **cfg)
                y2 = ring_batch_norm(x, w, b, *[s.clone() for s in state], 0.1, 1e-5, **cfg)  # the other parity
                torch.cuda.synchronize()
            except Exception as exc:  # noqa: BLE001 - a config that does not compile or fit is a row, not the end of the probe
                row[f"{name}_error"] = f"{type(exc).__name__}: {str(exc)[:300]}"
                print(name, row[f"{name}_error"], flush=True)
                continue
            row[f"{name}_max_abs_err"] = max((y.float() - ref).abs().max().item(), (y2.float() - ref).abs().max().item())
            row[f"{name}_running_err"] = max((state[0] - ref_rm).abs().max().item(),
                                             (state[1] - ref_rv).abs().max().item())
            row[f"{name}_batches"] = int(state[2].item())
            calls[name] = lambda cfg=cfg, state=state, x=x, w=w, b=b: ring_batch_norm(x, w, b, *state, 0.1, 1e-5, **cfg)
        lib_state = [torch.zeros(c, device="cuda"), torch.ones(c, device="cuda"),
                     torch.zeros((), dtype=torch.long, device="cuda")]
        yl = lib.batch_norm_train(x, w, b, *lib_state, 0.1, 1e-5)
        row["library_max_abs_err"] = (yl.float() - ref).abs().max().item()
        calls["library"] = lambda x=x, w=w, b=b, st=lib_state: lib.batch_norm_train(x, w, b, *st, 0.1, 1e-5)
        if x.numel() > 1 << 24:
            times = {name: [] for name in calls}
            for _ in range(args.rounds):
                for name, fn in calls.items():
                    times[name].append(triton.testing.do_bench(fn, warmup=25, rep=100))
            row["ms"] = times
            row["median_ms"] = {name: sorted(v)[len(v) // 2] for name, v in times.items()}
            row["pct_of_4250_gbps_at_median"] = {
                name: 100 * 2 * x.numel() * x.element_size() / (ms * 1e-3) / 4.25e12
                for name, ms in row["median_ms"].items()}
        print(json.dumps(row), flush=True)
        rows.append(row)
    if args.out:
        write_record(args.out, __file__, argv,
                     f"triton.testing.do_bench(warmup=25, rep=100) (L2 cleared), {args.rounds} alternating rounds; "
                     "errors against F.batch_norm in fp32 of the same inputs, two calls (both launch parities)", rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
