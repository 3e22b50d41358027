"""Probe: batch norm in training mode with each program's share of x HELD in shared memory between its statistics
and its apply, written in Gluon (explicit shared memory, TMA, mbarriers), against the library kernel ("streamed":
the apply re-reads x from L2) and eager, on Hopper, for bf16 planes of 4096 values.

Why: the library's streamed kernel moves x through L2 three times (DRAM read, L2 re-read, y write) and its counters show 10.6% of
bf16 x read twice from DRAM (`ncu-h200-20261201T1316Z.txt`): re-reads that missed L2. Holding the share in shared
memory makes DRAM and L2 carry x once and y once, as a copy does.

Design: one persistent program per SM (all resident: they wait on each other). The channels are cut into stages of
whole channels (CH_PER_STAGE channels), and a stage's planes, in channel-major order, into one even share per
program (Q planes at most), each plane one TMA box into shared memory. Step s: (1) TMA loads of the share of stage s
into buffer s % 2; (2) the apply of stage s - 1 from the other buffer: per channel, poll the per-program words of that
channel (published a step before), y = x * scale + shift, stored from registers; (3) wait for stage s, per channel
the share's sums of x - K and (x - K)^2 (K: the channel's first value, the same for every program), published as one
tagged 64-bit word per (channel, program) (the library's epoch scheme: a launch's parity in bit 63, no fill kernel).
The program whose share holds a channel's first plane updates its running statistics.

Measured on the H200 (triton 3.6; `benchmarks/results/gluon-batchnorm-probe-h200-20261201T1519Z.json` and
`-1520Z.json`, minima of five alternating do_bench runs, 256x128x64x64 bf16): correct (the library's max error,
running statistics within 6e-7), NOT faster: 0.1688 ms (3.18 TB/s) at 4 programs an SM of 3 planes, against the
library's 0.1500; one program an SM 0.2274, 2 an SM 0.1849, 3 an SM 0.1741; a third buffer (statistics a whole step
ahead of their apply) does not help (0.1711 / 0.1854); neither does the plane loop unrolled with no branch (STATIC:
both channels a share meets polled up front, per-row sums): 0.1826 against the loop's 0.1703 in the same runs
(`-1524Z.json`; 300x7x32x32: 0.0523 against the library's 0.0394). With one program an SM, ncu (`ncu-h200-20261201T1518Z.txt`)
has DRAM at 47% of peak and one warp a scheduler issuing every 3.9 cycles: latency-bound, not memory-bound. More
programs an SM stop being all resident past 4 (6: polls time out, wrong; 5 and 8: slower).

Usage (GPU box, repo root): python3 benchmarks/gpu/gluon_batchnorm_probe.py [--out FILE]
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
from triton.experimental.gluon.language.nvidia.hopper import fence_async_shared, mbarrier, tma
from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

REPO = Path(__file__).resolve().parents[2]
_tma_load = getattr(tma, "async_load", None) or tma.async_copy_global_to_shared  # triton 3.6 / later names
_cta_barrier = getattr(gl, "thread_barrier", None) or gl.barrier  # triton 3.6 / later names
MAX_SPIN = 200_000


@gluon.jit
def _share(pid, step, N, C, n_stages, P: gl.constexpr):
    """(first channel of stage `step`, the share's first and end unit within it, the stage's units) of program
    pid; stages of floor or ceil(C / n_stages) whole channels; past the last stage the share is empty."""
    c0 = step * C // n_stages
    units = gl.maximum((step + 1) * C // n_stages - c0, 0) * N
    units = gl.where(step < n_stages, units, 0)
    return c0, pid * units // P, (pid + 1) * units // P, units


@gluon.jit
def _channel_stats(words_ptr, x_ptr, c, c0, N, HW, units, tag, count, eps, max_spin, P: gl.constexpr,
                   GW: gl.constexpr, num_warps: gl.constexpr):
    """(mean, rstd) of channel c from the words of the programs whose shares meet it (polled until all are in)."""
    wl: gl.constexpr = gl.BlockedLayout([1], [32], [num_warps], [0])
    lo = (c - c0) * N
    hi = lo + N
    first = ((lo + 1) * P - 1) // units  # the last program whose share starts at or before lo
    last = (hi * P - 1) // units
    ps = first + gl.arange(0, GW, layout=wl)
    mask = ps <= last
    ptrs = words_ptr + c * P + ps
    words = gl.load(ptrs, mask=mask, other=tag, volatile=True) ^ tag
    spins = 0
    while (gl.min(words, axis=0) < 0) & (spins < max_spin):
        words = gl.load(ptrs, mask=mask, other=tag, volatile=True) ^ tag
        spins += 1
    s1 = gl.sum(gl.where(mask, (words & 0xFFFFFFFF).to(gl.int32).to(gl.float32, bitcast=True), 0.0), axis=0)
    s2 = gl.sum(gl.where(mask, (words >> 32).to(gl.int32).to(gl.float32, bitcast=True), 0.0), axis=0)
    k = gl.load(x_ptr + c * HW).to(gl.float32)
    m = s1 / count
    var = gl.maximum(s2 / count - m * m, 0.0)
    return k + m, gl.rsqrt(var + eps), var


@gluon.jit
def _bn_held_kernel(x_desc, x_ptr, y_ptr, w_ptr, b_ptr, words_ptr, ticket_ptr, rm_ptr, rv_ptr, nbt_ptr, N, C,
                    n_stages, eps, momentum, count, max_spin, Q: gl.constexpr,
                    P: gl.constexpr, GW: gl.constexpr, NBUF: gl.constexpr, UPDATE_RUNNING: gl.constexpr,
                    STATIC: gl.constexpr, num_warps: gl.constexpr):
    R: gl.constexpr = x_desc.block_type.shape[0]
    W: gl.constexpr = x_desc.block_type.shape[1]
    HW: gl.constexpr = R * W
    dtype: gl.constexpr = x_desc.dtype
    layout: gl.constexpr = gl.BlockedLayout([1, 8], [4, 8], [num_warps, 1], [1, 0])
    LAG: gl.constexpr = NBUF - 1  # stage s is applied in step s + LAG: its statistics had LAG - 1 steps to come in
    bufs = gl.allocate_shared_memory(dtype, [NBUF * Q, R, W], x_desc.layout)
    # one barrier per plane slot, so the statistics start on a plane as soon as it is in
    bars = gl.allocate_shared_memory(gl.int64, [NBUF * Q, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(NBUF * Q):
        mbarrier.init(bars.index(i), count=1)
    fence_async_shared()
    offs = gl.expand_dims(gl.arange(0, R, layout=gl.SliceLayout(1, layout)), 1) * W + \
        gl.expand_dims(gl.arange(0, W, layout=gl.SliceLayout(0, layout)), 0)
    pid = gl.program_id(0)
    ticket = gl.atomic_add(ticket_ptr, 1, sem="relaxed")
    tag = ((ticket // P) & 1).to(gl.int64) << 63
    _issue_share(x_desc, bufs, bars, pid, 0, N, C, n_stages, Q, P, R, NBUF)
    for step in range(n_stages + LAG):
        c0, a, b, units = _share(pid, step, N, C, n_stages, P)
        # (2) the apply of stage step - LAG
        if step >= LAG and STATIC:
            _apply_static(bufs, words_ptr, x_ptr, y_ptr, w_ptr, b_ptr, rm_ptr, rv_ptr, nbt_ptr, pid, step - LAG, N,
                          C, n_stages, tag, count, eps, momentum, max_spin, offs, Q, P, GW, NBUF, UPDATE_RUNNING,
                          layout, num_warps)
            _cta_barrier()
            fence_async_shared()
        if step >= LAG and not STATIC:
            c0p, ap, bp, unitsp = _share(pid, step - LAG, N, C, n_stages, P)
            cur = -1
            scale = 0.0
            shift = 0.0
            for q in range(bp - ap):
                u = ap + q
                c = c0p + u // N
                n = u % N
                if c != cur:  # n == 0: this share holds the channel's first plane
                    scale, shift = _scale_shift(words_ptr, x_ptr, w_ptr, b_ptr, rm_ptr, rv_ptr, nbt_ptr, c, c0p, N,
                                                HW, unitsp, tag, count, eps, momentum, max_spin, n == 0, P, GW,
                                                UPDATE_RUNNING, num_warps)
                    cur = c
                v = bufs.index(((step - LAG) % NBUF) * Q + q).load(layout).to(gl.float32)
                gl.store(y_ptr + (n * C + c).to(gl.int64) * HW + offs, (v * scale + shift).to(dtype))
            _cta_barrier()  # every warp has read the buffer before the TMA below writes it
            fence_async_shared()
        # (1) the next stage's loads, into the buffer just applied: in flight during (3) and the next apply
        if step + 1 < n_stages:
            _issue_share(x_desc, bufs, bars, pid, step + 1, N, C, n_stages, Q, P, R, NBUF)
        # (3) this step's statistics, published per (channel, program)
        if step < n_stages and STATIC:
            _stats_static(bufs, bars, words_ptr, x_ptr, pid, step, c0, a, b, N, HW, tag, Q, P, NBUF, layout)
        if step < n_stages and not STATIC:
            acc1 = gl.zeros([R, W], gl.float32, layout)
            acc2 = gl.zeros([R, W], gl.float32, layout)
            cur = c0 + a // N
            k = gl.load(x_ptr + cur * HW).to(gl.float32)
            for q in range(b - a):
                u = a + q
                c = c0 + u // N
                if c != cur:  # the share's run in channel `cur` ends: publish it, start the next
                    _publish(words_ptr + cur * P + pid, acc1, acc2, tag)
                    acc1 = gl.zeros([R, W], gl.float32, layout)
                    acc2 = gl.zeros([R, W], gl.float32, layout)
                    cur = c
                    k = gl.load(x_ptr + cur * HW).to(gl.float32)
                mbarrier.wait(bars.index((step % NBUF) * Q + q), (step // NBUF) & 1)
                d = bufs.index((step % NBUF) * Q + q).load(layout).to(gl.float32) - k
                acc1 += d
                acc2 += d * d
            if b > a:
                _publish(words_ptr + cur * P + pid, acc1, acc2, tag)


@gluon.jit
def _scale_shift(words_ptr, x_ptr, w_ptr, b_ptr, rm_ptr, rv_ptr, nbt_ptr, c, c0, N, HW, units, tag, count, eps,
                 momentum, max_spin, update, P: gl.constexpr, GW: gl.constexpr, UPDATE_RUNNING: gl.constexpr,
                 num_warps: gl.constexpr):
    """Channel c's (scale, shift); `update`: this share holds its first plane, so it updates the running stats."""
    mean, rstd, var = _channel_stats(words_ptr, x_ptr, c, c0, N, HW, units, tag, count, eps, max_spin, P, GW,
                                     num_warps)
    scale = gl.load(w_ptr + c).to(gl.float32) * rstd
    shift = gl.load(b_ptr + c).to(gl.float32) - mean * scale
    if UPDATE_RUNNING:
        if update:
            rm = gl.load(rm_ptr + c)
            rv = gl.load(rv_ptr + c)
            unbiased = var * count / gl.maximum(count - 1.0, 1.0)
            gl.store(rm_ptr + c, ((1.0 - momentum) * rm + momentum * mean).to(rm.dtype))
            gl.store(rv_ptr + c, ((1.0 - momentum) * rv + momentum * unbiased).to(rv.dtype))
            if c == 0:
                gl.store(nbt_ptr, gl.load(nbt_ptr) + 1)
    return scale, shift


@gluon.jit
def _apply_static(bufs, words_ptr, x_ptr, y_ptr, w_ptr, b_ptr, rm_ptr, rv_ptr, nbt_ptr, pid, stage, N, C, n_stages,
                  tag, count, eps, momentum, max_spin, offs, Q: gl.constexpr, P: gl.constexpr, GW: gl.constexpr,
                  NBUF: gl.constexpr, UPDATE_RUNNING: gl.constexpr, layout: gl.constexpr, num_warps: gl.constexpr):
    """The apply of `stage` with no branch in the plane loop (unrolled, so the planes' loads overlap): a share meets
    at most two channels, A (its first plane's) and B (its last plane's), both polled up front; slots past the
    share hold its last plane again and store the same values to the same place."""
    HW: gl.constexpr = bufs.shape[1] * bufs.shape[2]
    dtype: gl.constexpr = bufs.dtype
    c0, a, b, units = _share(pid, stage, N, C, n_stages, P)
    ca = c0 + a // N
    cb = c0 + (b - 1) // N
    sa, ha = _scale_shift(words_ptr, x_ptr, w_ptr, b_ptr, rm_ptr, rv_ptr, nbt_ptr, ca, c0, N, HW, units, tag, count,
                          eps, momentum, max_spin, a % N == 0, P, GW, UPDATE_RUNNING, num_warps)
    sb, hb = _scale_shift(words_ptr, x_ptr, w_ptr, b_ptr, rm_ptr, rv_ptr, nbt_ptr, cb, c0, N, HW, units, tag, count,
                          eps, momentum, max_spin, cb != ca, P, GW, UPDATE_RUNNING, num_warps)
    for q in gl.static_range(Q):
        u = a + gl.minimum(q, b - a - 1)
        c = c0 + u // N
        in_b = c != ca
        scale = gl.where(in_b, sb, sa)
        shift = gl.where(in_b, hb, ha)
        v = bufs.index((stage % NBUF) * Q + q).load(layout).to(gl.float32)
        gl.store(y_ptr + ((u % N) * C + c).to(gl.int64) * HW + offs, (v * scale + shift).to(dtype))


@gluon.jit
def _stats_static(bufs, bars, words_ptr, x_ptr, pid, stage, c0, a, b, N, HW, tag, Q: gl.constexpr, P: gl.constexpr,
                  NBUF: gl.constexpr, layout: gl.constexpr):
    """The statistics of `stage`, unrolled: per plane row sums (within a warp) into two small accumulators, one per
    channel the share meets, published once each."""
    rows: gl.constexpr = gl.SliceLayout(1, layout)
    R: gl.constexpr = bufs.shape[1]
    ca = c0 + a // N
    cb = c0 + (b - 1) // N
    ka = gl.load(x_ptr + ca * HW).to(gl.float32)
    kb = gl.load(x_ptr + cb * HW).to(gl.float32)
    a1 = gl.zeros([R], gl.float32, rows)
    a2 = gl.zeros([R], gl.float32, rows)
    b1 = gl.zeros([R], gl.float32, rows)
    b2 = gl.zeros([R], gl.float32, rows)
    for q in gl.static_range(Q):
        u = a + gl.minimum(q, b - a - 1)
        c = c0 + u // N
        wa = ((q < b - a) & (c == ca)).to(gl.float32)
        wb = ((q < b - a) & (c != ca)).to(gl.float32)
        mbarrier.wait(bars.index((stage % NBUF) * Q + q), (stage // NBUF) & 1)
        v = bufs.index((stage % NBUF) * Q + q).load(layout).to(gl.float32)
        da = v - gl.where(c == ca, ka, kb)
        r1 = gl.sum(da, axis=1)
        r2 = gl.sum(da * da, axis=1)
        a1 += r1 * wa
        a2 += r2 * wa
        b1 += r1 * wb
        b2 += r2 * wb
    if b > a:
        _publish_sums(words_ptr + ca * P + pid, gl.sum(a1, axis=0), gl.sum(a2, axis=0), tag)
    if cb != ca:
        _publish_sums(words_ptr + cb * P + pid, gl.sum(b1, axis=0), gl.sum(b2, axis=0), tag)


@gluon.jit
def _publish_sums(word_ptr, s1, s2, tag):
    lo = s1.to(gl.int32, bitcast=True).to(gl.int64) & 0xFFFFFFFF
    hi = (s2.to(gl.int32, bitcast=True) & 0x7FFFFFFF).to(gl.int64)
    gl.atomic_xchg(word_ptr, (hi << 32) | lo | tag, sem="relaxed")


@gluon.jit
def _issue_share(x_desc, bufs, bars, pid, step, N, C, n_stages, Q: gl.constexpr, P: gl.constexpr, R: gl.constexpr,
                 NBUF: gl.constexpr):
    """TMA loads of program pid's share of stage `step` into buffer step % NBUF: every one of the Q slots, past the
    share's end its last plane again (an L2 hit), so each slot's barrier completes a phase every use."""
    c0, a, b, units = _share(pid, step, N, C, n_stages, P)
    for q in gl.static_range(Q):
        bar = bars.index((step % NBUF) * Q + q)
        u = a + gl.minimum(q, b - a - 1)
        mbarrier.expect(bar, x_desc.block_type.nbytes)
        _tma_load(x_desc, [((u % N) * C + c0 + u // N) * R, 0], bar, bufs.index((step % NBUF) * Q + q))


@gluon.jit
def _publish(word_ptr, acc1, acc2, tag):
    _publish_sums(word_ptr, gl.sum(gl.sum(acc1, axis=1), axis=0), gl.sum(gl.sum(acc2, axis=1), axis=0), tag)


_WORKSPACE: dict = {}


def held_batch_norm(x, weight, bias, running_mean, running_var, num_batches_tracked, momentum, eps, Q=3, NBUF=2,
                    num_warps=4, PER_SM=4, STATIC=True):
    """bf16 or fp16 x (N, C, H, W) with H * W = 64 * R (R a power of 2 <= 256)."""
    n, c = x.shape[:2]
    hw = x.numel() // (n * c)
    if hw % 64 or (hw // 64) & (hw // 64 - 1) or hw // 64 > 256 or x.element_size() != 2:
        raise ValueError(f"held_batch_norm: planes of {hw} {x.dtype} values are not 64 x a power of 2 of 16-bit")
    r = hw // 64
    plane_bytes = hw * x.element_size()
    sms = torch.cuda.get_device_properties(x.device).multi_processor_count
    # PER_SM programs an SM, all resident (they wait on each other); more of them hide more latency
    n_stages = triton.cdiv(c, max(1, min(c, Q * sms * PER_SM // n)))  # stages of whole channels, <= Q planes a share
    ch_min, ch_max = c // n_stages, triton.cdiv(c, n_stages)
    programs = min(sms * PER_SM, ch_min * n)  # every share holds a plane (a poll waits on every program in its window)
    if triton.cdiv(ch_max * n, programs) > Q or PER_SM * NBUF * Q * plane_bytes > 227 * 1024:
        raise ValueError(f"held_batch_norm: {ch_max} channels of {n} planes over {programs} programs exceed Q={Q}")
    # programs meeting one channel, at least one word a thread (a layout may not cover more lanes than values)
    gw = max(triton.next_power_of_2(triton.cdiv(n * programs, ch_min * n) + 2), 32 * num_warps)
    key = (str(x.device), n, c, hw, programs, Q)  # everything that decides which words a launch writes
    if key not in _WORKSPACE:
        ws = torch.full((1 + c * programs,), -1, dtype=torch.int64, device=x.device)
        ws[0] = 0
        _WORKSPACE[key] = ws
    ws = _WORKSPACE[key]
    x2 = x.view(n * c * r, 64)
    layout = gl.NVMMASharedLayout.get_default_for([r, 64], gl.bfloat16 if x.dtype == torch.bfloat16 else gl.float16)
    x_desc = TensorDescriptor.from_tensor(x2, [r, 64], layout)
    y = torch.empty_like(x)
    _bn_held_kernel[(programs,)](
        x_desc, x, y, weight, bias, ws[1:], ws[:1], running_mean, running_var, num_batches_tracked, n, c, n_stages,
        eps, momentum, float(n * hw), MAX_SPIN, Q=Q, P=programs, GW=gw, NBUF=NBUF, UPDATE_RUNNING=True,
        STATIC=STATIC, num_warps=num_warps)
    return y


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="")
    parser.add_argument("--ncu", default="", metavar="Q,NBUF,PER_SM",
                        help="only run that config at 256x128x64x64 bf16: three calls, then one in a profiler range")
    args = parser.parse_args(argv)
    if args.ncu:
        q, nbuf, per_sm = (int(v) for v in args.ncu.split(","))
        x = torch.randn(256, 128, 64, 64, device="cuda", dtype=torch.bfloat16)
        w, b = torch.randn(128, device="cuda"), torch.randn(128, device="cuda")
        state = [torch.zeros(128, device="cuda"), torch.ones(128, device="cuda"),
                 torch.zeros((), dtype=torch.long, device="cuda")]
        for _ in range(3):
            held_batch_norm(x, w, b, *state, 0.1, 1e-5, Q=q, NBUF=nbuf, PER_SM=per_sm)
        torch.cuda.synchronize()
        torch.cuda.profiler.start()
        held_batch_norm(x, w, b, *state, 0.1, 1e-5, Q=q, NBUF=nbuf, PER_SM=per_sm)
        torch.cuda.synchronize()
        torch.cuda.profiler.stop()
        return 0
    sys.path.insert(0, str(REPO))
    from harness.spec import import_file

    lib = import_file(REPO / "corpus/kernels/batchnorm/kernel.py", "gluon_bn_probe_lib")
    lib.TUNABLES["STRATEGY"] = "streamed"  # what this probe compares with ("auto" takes "ring" on sm_90 now)
    rows = []
    for shape, configs in [((256, 128, 64, 64), [{"Q": 3, "PER_SM": 4, "STATIC": False}, {"Q": 3, "PER_SM": 4},
                                                 {"Q": 6, "PER_SM": 2}, {"Q": 4, "PER_SM": 3},
                                                 {"Q": 2, "NBUF": 3, "PER_SM": 4}]),
                           ((3, 5, 8, 8), [{"Q": 3, "PER_SM": 4}]), ((300, 7, 32, 32), [{"Q": 3, "PER_SM": 4}])]:
        torch.manual_seed(0)
        x = torch.randn(shape, device="cuda", dtype=torch.bfloat16) * 2.0 + 1.0
        c = shape[1]
        w, b = torch.randn(c, device="cuda"), torch.randn(c, device="cuda")
        ref_rm, ref_rv = torch.zeros(c, device="cuda"), torch.ones(c, device="cuda")
        ref = torch.nn.functional.batch_norm(x.float(), ref_rm, ref_rv, w, b, training=True, momentum=0.1, eps=1e-5)
        row = {"shape": list(shape)}
        calls = {}
        for cfg in configs:
            name = "held_" + "_".join(f"{k}{v}" for k, v in cfg.items())
            state = [torch.zeros(c, device="cuda"), torch.ones(c, device="cuda"), torch.zeros((), dtype=torch.long,
                                                                                            device="cuda")]
            y = held_batch_norm(x, w, b, *state, 0.1, 1e-5, **cfg)
            torch.cuda.synchronize()
            row[f"{name}_max_abs_err"] = (y.float() - ref).abs().max().item()
            row[f"{name}_running_err"] = max((state[0] - ref_rm).abs().max().item(),
                                             (state[1] - ref_rv).abs().max().item())
            row[f"{name}_batches"] = int(state[2].item())
            calls[name] = lambda cfg=cfg, state=state: held_batch_norm(x, w, b, *state, 0.1, 1e-5, **cfg)
        lib_state = [torch.zeros(c, device="cuda"), torch.ones(c, device="cuda"),
                     torch.zeros((), dtype=torch.long, device="cuda")]
        yl = lib.batch_norm_train(x, w, b, *lib_state, 0.1, 1e-5)
        row["library_max_abs_err"] = (yl.float() - ref).abs().max().item()
        calls["library_streamed"] = lambda: lib.batch_norm_train(x, w, b, *lib_state, 0.1, 1e-5)
        calls["eager"] = lambda: torch.nn.functional.batch_norm(x, lib_state[0], lib_state[1], w, b, training=True)
        if x.numel() > 1 << 20:
            times = {name: [] for name in calls}
            for _ in range(5):
                for name, fn in calls.items():
                    times[name].append(triton.testing.do_bench(fn, warmup=25, rep=100))
            row["ms"] = times
            row["min_ms"] = {name: min(v) for name, v in times.items()}
            row["gbps_at_min"] = {name: 2 * x.numel() * x.element_size() / (min(v) * 1e-3) / 1e9
                                  for name, v in times.items()}
        print(json.dumps(row), flush=True)
        rows.append(row)
    if args.out:
        write_record(args.out, __file__, argv, "triton.testing.do_bench(warmup=25, rep=100), 5 alternating runs", rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
