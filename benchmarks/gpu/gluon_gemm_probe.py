"""Probe: persistent bf16 GEMMs with the gemm_epilogue spec's epilogue written in Gluon (Triton's lower-level
dialect: explicit shared memory, mbarriers, TMA, wgmma and warp specialisation), against our Triton kernel and
cuBLAS, on Hopper. Four forms:
- gluon_gemm: one flat loop over (tile, k-step) pairs, so the next tile's first loads are in flight during this
  tile's epilogue; the residual comes by TMA when a tile starts, into the buffer its output leaves from.
- gluon_gemm_ws: warp-specialised as cuBLAS's kernel is (a TMA loader warp; two consumer warp groups, each 64 rows of
  a 128x256 tile, releasing each stage through an mbarrier); options for timing the epilogue's parts: EPI_REGS (from
  registers instead of by TMA), EPI_NONE (none), GELU.
- gluon_gemm_ws_epi: the same, with the epilogue in warps of their own: the MMA warp groups hand x W^T + b, rounded
  to 16 bits (what eager's linear hands its activation), through shared memory and start the next tile at once;
  options AHEAD, SKIP and PART (see _epi_worker). With AHEAD it is the library's
  Hopper kernel (corpus/kernels/gemm_epilogue/kernel.py, TALL_HOPPER_WS), whose tile order, loader warp, MMA k-steps
  and residual slices every form here uses.
- gluon_gemm_ws3: three MMA warp groups of 64x256 sharing each W stage (chunks of up to 192x256: 17% fewer operand
  bytes by count), each program an even share of the 64-row units; warp group 0 issues the loads (a loader warp
  of its own would launch 16 warps, whose 128-register cap ptxas rejects for a 64x256 wgmma).

Measured on the H200 (triton 3.6; GPU tests `benchmarks/results/logs/gpu-tests-gluon-*probe*-h200-*.log`): all correct.
Minima of five alternating do_bench runs (`gluon-gemm-probe-h200-20261201T1512Z.json`; the box timed some rounds
1.3-1.6x slow): tall 32768x2048 -> 512: ws_epi 0.1176 ms, ws 0.1188, our Triton kernel 0.1187, cuBLAS F.linear
alone 0.0973; 4096^3: ws 0.2031, ws_epi 0.2052, ours 0.2073, cuBLAS 0.1909 (`-1509Z.json`, `-1503Z.json`: the same
order). The flat loop alone is slower (tall 0.1217-0.1242, 4096^3 0.219-0.228). Warp specialisation and a
separate epilogue are worth ~1%, not the 15-19% to cuBLAS, whose kernel (`ncu-h200-20261201T1457Z.txt`) moves 19%
fewer bytes through L2 (592 against 729 MB) with 256x128 tiles on clusters of two CTAs; triton 3.6's Gluon launches
clusters (num_ctas with a cga_layout) but its TMA copies take no multicast. ws3 does not test the bytes: under ncu it
moves more than ws, not fewer (737-810 against 689-743 MB, `ncu-h200-20261201T210018Z.txt`, `-210714Z.txt`), and is
slower in every epilogue form. The bytes are not the gap anyway: ws's main loop alone (EPI_NONE, x W^T + b) runs as
fast as cuBLAS (tall 0.1035-0.1045 against 0.1032-0.1046 ms, `gluon-gemm-probe-h200-20261201T212658Z.json`,
`-213432Z.json`); the epilogue costs it ~16% (an epilogue straight from registers ~10% more). ws_epi with AHEAD
(residual slices a slice ahead, each MMA group's half of the buffer back once read): tall 0.1151 ms against our
kernel's 0.1194 and cuBLAS's 0.1014 (`-214552Z.json`); with SKIP (no epilogue work) 0.0990, so the hand-off is free
and the time goes to the epilogue warps' work (docs/LIBRARY.md, session 14). Session 15 (`-231628Z.json`, a noisy
window, and `-232221Z.json`): neither the GELU alone nor the loads and stores alone is that cost (each costs most
of it), residual slices further ahead (DEPTH) and the last tile's epilogue by the MMA groups (LAST_HERE) are no
faster (docs/LIBRARY.md, session 15; those two options' code is in commit 5023c5c, removed after). Session 16: do_bench
timed every form at 0.13-0.21 ms (`-20261202T012405Z.json`): a JIT launch took longer than the kernel on that host, so
--timer cudagraph replays the calls from a CUDA graph; 128x128 tiles (EPI_NARROW_CONFIGS) with four epilogue warps
0.1206-0.1215 ms, with two 0.1228-0.1252, the library's 128x256 form 0.1185-0.1204, cuBLAS 0.1079-0.1101
(`-20261202T015056Z.json`).

Usage (GPU box, repo root): python3 benchmarks/gpu/gluon_gemm_probe.py [--out FILE] [--forms gluon_ws3,ours]
    [--shapes 32768x2048x512,...] [--ws3-configs '[{"BK": 64, "STAGES": 4, "CHUNK": 1}]'] [--epi-configs JSON]
    [--timer cudagraph]
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
from triton.experimental.gluon.language.nvidia.hopper import (
    fence_async_shared,
    mbarrier,
    tma,
    warpgroup_mma,
    warpgroup_mma_wait,
)
from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

REPO = Path(__file__).resolve().parents[2]


sys.path.insert(0, str(REPO))
from harness.spec import import_file  # (after the repo root goes on the path)

# corpus/kernels/gemm_epilogue/kernel.py ("ours" below): the probe's forms share its Hopper kernel's pieces (that
# kernel is this probe's ws_epi form with AHEAD, moved into the library)
_LIB = import_file(REPO / "corpus" / "kernels" / "gemm_epilogue" / "kernel.py", "gluon_probe_ours")
# the grouped tile order, the TMA loader warp, one MMA warp group's k-steps over a tile (its HALF rows of each
# stage), and a CHUNK-row slice of the residual, as the library kernel runs them
_tile_of, _ws_loader, _consumer_tile, _epi_residual = (_LIB._hopper_tile, _LIB._hopper_loader, _LIB._hopper_k_steps,
                                                       _LIB._hopper_residual)
_mma_group = _LIB._hopper_mma  # one MMA warp group of the epilogue-apart form: its tiles' x W^T + b into hbuf
# triton 3.6 (the GPU box) names the TMA copies async_copy_*; later versions (3.9 here, compiling for sm_90 on the
# CPU) call them async_load / async_store
_tma_load = getattr(tma, "async_load", None) or tma.async_copy_global_to_shared
_tma_store = getattr(tma, "async_store", None) or tma.async_copy_shared_to_global
_cta_barrier = getattr(gl, "thread_barrier", None) or gl.barrier  # triton 3.6 / later names


@gluon.jit
def _gelu_scaled(v, scale):
    """gelu(v) * scale in fp32, gelu's tanh form through tanh.approx (the library kernel's GELU_16BIT "tanh_hw")."""
    half = (0.5 * scale) * v
    inner = v * (0.7978845608028654 + 0.035677408136300125 * v * v)
    th = gl.inline_asm_elementwise("tanh.approx.f32 $0, $1;", "=f,f", [inner], dtype=gl.float32, is_pure=True,
                                   pack=1)
    return half + half * th


@gluon.jit
def _gelu_scaled_as(v, scale, GELU: gl.constexpr):
    """_gelu_scaled (GELU "f32"); "bf16x2": tanh on pairs of bf16 values (tanh.approx.bf16x2: one MUFU op for two);
    "none": v * scale (no GELU: what it costs, for timing only)."""
    if GELU == "none":
        return v * scale
    if GELU == "bf16x2":
        half = (0.5 * scale) * v
        inner = (v * (0.7978845608028654 + 0.035677408136300125 * v * v)).to(gl.bfloat16)
        th = gl.inline_asm_elementwise("tanh.approx.bf16x2 $0, $1;", "=r,r", [inner], dtype=gl.bfloat16,
                                       is_pure=True, pack=2)
        return half + half * th.to(gl.float32)
    return _gelu_scaled(v, scale)


@gluon.jit
def _operand_rings(a_desc, b_desc, STAGES: gl.constexpr):
    """STAGES shared-memory slots for x tiles and for W tiles, in their descriptors' block shapes and layouts."""
    a_bufs = gl.allocate_shared_memory(a_desc.dtype, [STAGES] + a_desc.block_type.shape, a_desc.layout)
    b_bufs = gl.allocate_shared_memory(b_desc.dtype, [STAGES] + b_desc.block_type.shape, b_desc.layout)
    return a_bufs, b_bufs


@gluon.jit
def _issue(a_desc, b_desc, it, lk, lpm, lpn, total, bars, a_bufs, b_bufs, STAGES: gl.constexpr, BM: gl.constexpr,
           BN: gl.constexpr, BK: gl.constexpr):
    # the loads of flat iteration `it` (k-step lk of the tile at block (lpm, lpn)), if it exists
    s = it % STAGES
    ok = it < total
    bar = bars.index(s)
    mbarrier.expect(bar, a_desc.block_type.nbytes + b_desc.block_type.nbytes, ok)
    _tma_load(a_desc, [lpm * BM, lk * BK], bar, a_bufs.index(s), ok)
    _tma_load(b_desc, [lpn * BN, lk * BK], bar, b_bufs.index(s), ok)


@gluon.jit
def _gemm_gelu_residual_kernel(a_desc, b_desc, r_desc, y_desc, bias_ptr, N, scale, n_tiles, n_blocks_m,
                               K_STEPS: gl.constexpr, N_BLOCKS_N: gl.constexpr, STAGES: gl.constexpr,
                               GROUP_M: gl.constexpr, num_warps: gl.constexpr):
    # Tile and k-step counters move by increments (a runtime division per tile, none per k-step: a 32-bit division
    # is ~30 instructions, and all 8 warps would run it every k-step).
    BM: gl.constexpr = y_desc.block_type.shape[0]
    BN: gl.constexpr = y_desc.block_type.shape[1]
    BK: gl.constexpr = a_desc.block_type.shape[1]
    dtype: gl.constexpr = a_desc.dtype
    acc_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[num_warps, 1],
                                                         instr_shape=[16, BN, 16])
    a_bufs, b_bufs = _operand_rings(a_desc, b_desc, STAGES)
    ry_buf = gl.allocate_shared_memory(dtype, [BM, BN], y_desc.layout)  # residual in, then output out
    bars = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    r_bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    for i in gl.static_range(STAGES):
        mbarrier.init(bars.index(i), count=1)
    mbarrier.init(r_bar, count=1)
    fence_async_shared()

    pid = gl.program_id(0)
    n_progs = gl.num_programs(0)
    my_tiles = (n_tiles - pid + n_progs - 1) // n_progs
    total = my_tiles * K_STEPS
    # load side: the k-step lk and tile (ltile, lpm, lpn) of the next flat iteration to load
    ltile = pid
    lpm, lpn = _tile_of(ltile, n_blocks_m, N_BLOCKS_N, GROUP_M)
    lk = 0
    for i in gl.static_range(STAGES - 1):
        _issue(a_desc, b_desc, i, lk, lpm, lpn, total, bars, a_bufs, b_bufs, STAGES, BM, BN, BK)
        lk += 1
        if lk == K_STEPS:
            lk = 0
            ltile += n_progs
            lpm, lpn = _tile_of(ltile, n_blocks_m, N_BLOCKS_N, GROUP_M)
    cols0 = gl.arange(0, BN, layout=gl.SliceLayout(0, acc_layout))
    acc = gl.zeros([BM, BN], gl.float32, acc_layout)
    tile = pid
    pm, pn = _tile_of(tile, n_blocks_m, N_BLOCKS_N, GROUP_M)
    kk = 0
    n_done = 0
    for it in range(total):
        if kk == 0:
            # the bias starts the accumulator; the residual comes into the output buffer once its last store is out
            cols = pn * BN + cols0
            bias = gl.load(bias_ptr + cols, mask=cols < N, other=0.0).to(gl.float32)
            acc = gl.zeros([BM, BN], gl.float32, acc_layout) + gl.expand_dims(bias, 0)
            tma.store_wait(pendings=0)
            mbarrier.expect(r_bar, r_desc.block_type.nbytes)
            _tma_load(r_desc, [pm * BM, pn * BN], r_bar, ry_buf)
        s = it % STAGES
        mbarrier.wait(bars.index(s), (it // STAGES) & 1)
        acc = warpgroup_mma(a_bufs.index(s), b_bufs.index(s).permute((1, 0)), acc, is_async=True)
        # one MMA left in flight: the one before it is done, so its stage takes the load STAGES - 1 ahead
        acc = warpgroup_mma_wait(1, deps=(acc,))
        _issue(a_desc, b_desc, it + STAGES - 1, lk, lpm, lpn, total, bars, a_bufs, b_bufs, STAGES, BM, BN, BK)
        lk += 1
        if lk == K_STEPS:
            lk = 0
            ltile += n_progs
            lpm, lpn = _tile_of(ltile, n_blocks_m, N_BLOCKS_N, GROUP_M)
        kk += 1
        if kk == K_STEPS:
            acc = warpgroup_mma_wait(0, deps=(acc,))
            # gelu (tanh form through tanh.approx) * scale, rounded, + residual, rounded: the spec's order
            y = _gelu_scaled(acc, scale).to(dtype)
            mbarrier.wait(r_bar, n_done & 1)
            r = ry_buf.load(acc_layout)
            out = (y.to(gl.float32) + r.to(gl.float32)).to(dtype)
            _cta_barrier()  # every warp has read the residual before the buffer takes the output
            ry_buf.store(out)
            fence_async_shared()
            _tma_store(y_desc, [pm * BM, pn * BN], ry_buf)
            kk = 0
            n_done += 1
            tile += n_progs
            pm, pn = _tile_of(tile, n_blocks_m, N_BLOCKS_N, GROUP_M)
    tma.store_wait(pendings=0)


@gluon.jit
def _ws_consumer(r_desc, y_desc, a_bufs, b_bufs, ready, empty, ry_bufs, r_bars, bias_ptr, r_ptr, y_ptr, M, N,
                 stride_rm, stride_ym, scale, n_tiles, n_blocks_m, WG: gl.constexpr, K_STEPS: gl.constexpr,
                 N_BLOCKS_N: gl.constexpr, STAGES: gl.constexpr, GROUP_M: gl.constexpr, EPI_REGS: gl.constexpr,
                 EVEN: gl.constexpr, EPI_NONE: gl.constexpr, GELU: gl.constexpr):
    # One warp group: rows [64 WG, 64 WG + 64) of each tile, its own residual/output buffer and barrier, so the
    # two consumers never wait for each other except through the shared stages. EPI_REGS: the epilogue from
    # registers in two column halves (_ws3_epilogue_halves), no buffer, so a fourth stage fits. EPI_NONE: no
    # epilogue (x W^T + b out by TMA, no residual, no GELU), to time the main loop alone. GELU: see _gelu_scaled_as.
    HALF: gl.constexpr = y_desc.block_type.shape[0]
    BN: gl.constexpr = y_desc.block_type.shape[1]
    dtype: gl.constexpr = y_desc.dtype
    acc_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1],
                                                         instr_shape=[16, BN, 16])
    ry = ry_bufs.index(WG if not EPI_REGS else 0)
    r_bar = r_bars.index(WG)
    cols0 = gl.arange(0, BN, layout=gl.SliceLayout(0, acc_layout))
    it = 0
    n_done = 0
    for tile in range(gl.program_id(0), n_tiles, gl.num_programs(0)):
        pm, pn = _tile_of(tile, n_blocks_m, N_BLOCKS_N, GROUP_M)
        row0 = pm * (2 * HALF) + WG * HALF
        cols = pn * BN + cols0
        bias = gl.load(bias_ptr + cols, mask=cols < N, other=0.0).to(gl.float32)
        acc = gl.zeros([HALF, BN], gl.float32, acc_layout) + gl.expand_dims(bias, 0)
        if not EPI_REGS and not EPI_NONE:
            tma.store_wait(pendings=0)  # the last output has left the buffer the residual comes into
            mbarrier.expect(r_bar, r_desc.block_type.nbytes)
            _tma_load(r_desc, [row0, pn * BN], r_bar, ry)
        acc, it = _consumer_tile(a_bufs, b_bufs, ready, empty, acc, it, WG, HALF, K_STEPS, STAGES)
        if EPI_NONE:
            tma.store_wait(pendings=0)
            ry.store(acc.to(dtype))
            fence_async_shared()
            _tma_store(y_desc, [row0, pn * BN], ry)
        elif EPI_REGS:
            _ws3_epilogue_halves(acc, pn * BN, row0, r_ptr, y_ptr, M, N, stride_rm, stride_ym, scale, EVEN)
        else:
            y = _gelu_scaled_as(acc, scale, GELU).to(dtype)
            mbarrier.wait(r_bar, n_done & 1)
            out = (y.to(gl.float32) + ry.load(acc_layout).to(gl.float32)).to(dtype)
            _cta_barrier()  # this warp group has read the residual before the buffer takes the output
            ry.store(out)
            fence_async_shared()
            _tma_store(y_desc, [row0, pn * BN], ry)
        n_done += 1
    tma.store_wait(pendings=0)


@gluon.jit
def _gemm_ws_kernel(a_desc, b_desc, r_desc, y_desc, bias_ptr, r_ptr, y_ptr, M, N, stride_rm, stride_ym, scale, n_tiles,
                    n_blocks_m, K_STEPS: gl.constexpr, N_BLOCKS_N: gl.constexpr, STAGES: gl.constexpr,
                    GROUP_M: gl.constexpr, CONSUMER_REGS: gl.constexpr, LOADER_REGS: gl.constexpr,
                    EPI_REGS: gl.constexpr, EVEN: gl.constexpr, EPI_NONE: gl.constexpr, GELU: gl.constexpr):
    """Warp-specialised: a loader warp and two consumer warp groups (each 64 rows of a 128-row tile)."""
    dtype: gl.constexpr = a_desc.dtype
    a_bufs, b_bufs = _operand_rings(a_desc, b_desc, STAGES)
    # the residual/output buffers (EPI_REGS: none; a stand-in of 8 rows)
    ry_bufs = gl.allocate_shared_memory(dtype, [1 if EPI_REGS else 2, 8 if EPI_REGS else y_desc.block_type.shape[0],
                                                y_desc.block_type.shape[1]], y_desc.layout)
    ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    r_bars = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(STAGES):
        mbarrier.init(ready.index(i), count=1)
        mbarrier.init(empty.index(i), count=2)  # one arrival from each consumer warp group
    for i in gl.static_range(2):
        mbarrier.init(r_bars.index(i), count=1)
    fence_async_shared()
    gl.warp_specialize([
        (_ws_consumer, (r_desc, y_desc, a_bufs, b_bufs, ready, empty, ry_bufs, r_bars, bias_ptr, r_ptr, y_ptr, M, N,
                        stride_rm, stride_ym, scale, n_tiles, n_blocks_m, 0, K_STEPS, N_BLOCKS_N, STAGES, GROUP_M,
                        EPI_REGS, EVEN, EPI_NONE, GELU)),
        (_ws_consumer, (r_desc, y_desc, a_bufs, b_bufs, ready, empty, ry_bufs, r_bars, bias_ptr, r_ptr, y_ptr, M, N,
                        stride_rm, stride_ym, scale, n_tiles, n_blocks_m, 1, K_STEPS, N_BLOCKS_N, STAGES, GROUP_M,
                        EPI_REGS, EVEN, EPI_NONE, GELU)),
        (_ws_loader, (a_desc, b_desc, a_bufs, b_bufs, ready, empty, n_tiles, n_blocks_m, K_STEPS, N_BLOCKS_N, STAGES,
                      GROUP_M)),
    ], [4, 1], [CONSUMER_REGS, LOADER_REGS])


def gluon_gemm_ws(x, w, b, r, scale, BM=128, BN=256, BK=64, STAGES=3, GROUP_M=8, CONSUMER_REGS=232, LOADER_REGS=40,
                  EPI_REGS=False, EPI_NONE=False, GELU="f32"):
    M, K = x.shape
    N = w.shape[0]
    y = torch.empty((M, N), device=x.device, dtype=x.dtype)
    a_desc = TensorDescriptor.from_tensor(x, [BM, BK], gl.NVMMASharedLayout.get_default_for([BM, BK], gl.bfloat16))
    b_desc = TensorDescriptor.from_tensor(w, [BN, BK], gl.NVMMASharedLayout.get_default_for([BN, BK], gl.bfloat16))
    half_layout = gl.NVMMASharedLayout.get_default_for([BM // 2, BN], gl.bfloat16)
    r_desc = TensorDescriptor.from_tensor(r, [BM // 2, BN], half_layout)
    y_desc = TensorDescriptor.from_tensor(y, [BM // 2, BN], half_layout)
    n_bm, n_bn = triton.cdiv(M, BM), triton.cdiv(N, BN)
    n_tiles = n_bm * n_bn
    sms = torch.cuda.get_device_properties(x.device).multi_processor_count
    compiled = _gemm_ws_kernel[(min(sms, n_tiles),)](
        a_desc, b_desc, r_desc, y_desc, b, r, y, M, N, r.stride(0), y.stride(0), float(scale), n_tiles, n_bm,
        K_STEPS=triton.cdiv(K, BK), N_BLOCKS_N=n_bn, STAGES=STAGES, GROUP_M=GROUP_M, CONSUMER_REGS=CONSUMER_REGS,
        LOADER_REGS=LOADER_REGS, EPI_REGS=EPI_REGS, EVEN=M % (BM // 2) == 0 and N % BN == 0, EPI_NONE=EPI_NONE,
        GELU=GELU, num_warps=4)
    LAST_COMPILED[0] = compiled
    return y


@gluon.jit
def _epi_worker(hbuf, hfull, hfree, r_ptr, y_ptr, M, N, stride_rm, stride_ym, scale, n_tiles, n_blocks_m,
                N_BLOCKS_N: gl.constexpr, GROUP_M: gl.constexpr, CHUNK: gl.constexpr, AHEAD: gl.constexpr,
                SKIP: gl.constexpr, PART: gl.constexpr):
    # The epilogue warps: gelu (tanh form, tanh.approx) * scale on the 16-bit linear output, rounded, plus the
    # residual, rounded, in CHUNK-row slices with coalesced 16-byte loads and stores, while the MMAs go on.
    # AHEAD: each slice's residual is loaded a slice ahead (the next tile's first before this tile's output is in),
    # and each MMA warp group gets its half of the buffer back (hfree[WG]) once the epilogue has read it; without,
    # every slice waits for its own residual and both halves come back at the tile's end. SKIP: no epilogue at all
    # (the buffer handed straight back; wrong output, for timing the hand-off alone). PART (with AHEAD; all but "all"
    # give wrong outputs, for timing the epilogue's parts): "math" the GELU alone (no residual loads, stores only
    # where a value is 1236992, i.e. never), "memory" the loads and stores alone (no GELU), "l2res" every tile reads
    # the first tile's residual (it stays in L2: what the residual's DRAM traffic costs). Measured and dropped
    # (session 15, code in commit 5023c5c): residual slices 2-4 ahead (DEPTH) and the program's last tile's epilogue
    # run by the MMA warp groups (LAST_HERE, PREFETCH).
    BM: gl.constexpr = hbuf.shape[0]
    BN: gl.constexpr = hbuf.shape[1]
    N_CHUNKS: gl.constexpr = BM // CHUNK
    # 16-byte runs along a row: BN // 8 lanes across it (32 at BN 256, 16 and two rows a warp at BN 128)
    layout: gl.constexpr = gl.BlockedLayout([1, 8], [32 // (BN // 8), BN // 8], [gl.num_warps(), 1], [1, 0])
    rows0 = gl.arange(0, CHUNK, layout=gl.SliceLayout(1, layout))
    cols0 = gl.arange(0, BN, layout=gl.SliceLayout(0, layout))
    gl.static_assert(PART == "all" or AHEAD, "PART other than 'all' needs AHEAD")
    RES: gl.constexpr = 0 if PART == "l2res" else 1  # 0: the residual rows of tile 0 for every tile
    n = 0
    pm, pn = _tile_of(gl.program_id(0), n_blocks_m, N_BLOCKS_N, GROUP_M)
    r_next = _epi_residual(r_ptr, pm * RES, pn * RES, 0, (gl.program_id(0) < n_tiles) & (PART != "math"), M, N,
                           stride_rm, BM, BN, CHUNK, layout)
    for tile in range(gl.program_id(0), n_tiles, gl.num_programs(0)):
        pm, pn = _tile_of(tile, n_blocks_m, N_BLOCKS_N, GROUP_M)
        next_tile = tile + gl.num_programs(0)
        npm, npn = _tile_of(next_tile, n_blocks_m, N_BLOCKS_N, GROUP_M)
        cols = pn * BN + cols0
        mbarrier.wait(hfull, n & 1)
        for c in gl.static_range(0 if SKIP else N_CHUNKS):
            rows = pm * BM + c * CHUNK + rows0
            mask = gl.expand_dims(rows < M, 1) & gl.expand_dims(cols < N, 0)
            if AHEAD:
                r = r_next
                if c + 1 < N_CHUNKS:
                    r_next = _epi_residual(r_ptr, pm * RES, pn * RES, c + 1, PART != "math", M, N, stride_rm, BM, BN,
                                           CHUNK, layout)
                else:
                    r_next = _epi_residual(r_ptr, npm * RES, npn * RES, 0, (next_tile < n_tiles) & (PART != "math"), M,
                                           N, stride_rm, BM, BN, CHUNK, layout)
            else:
                r = gl.load(r_ptr + gl.expand_dims(rows * stride_rm, 1) + gl.expand_dims(cols, 0), mask=mask,
                            other=0.0)
            v = hbuf.slice(c * CHUNK, CHUNK).load(layout).to(gl.float32)
            if AHEAD and c == N_CHUNKS // 2 - 1:  # the first MMA warp group's rows are read
                mbarrier.arrive(hfree.index(0))
            if PART == "memory":
                y = v.to(hbuf.dtype)
            else:
                y = _gelu_scaled(v, scale).to(hbuf.dtype)
            out = (y.to(gl.float32) + r.to(gl.float32)).to(hbuf.dtype)
            if PART == "math":
                mask = mask & (out.to(gl.float32) == 1236992.0)  # a bf16 value (else the GELU is folded away)
            gl.store(y_ptr + gl.expand_dims(rows * stride_ym, 1) + gl.expand_dims(cols, 0), out, mask=mask)
        if AHEAD:
            mbarrier.arrive(hfree.index(1))
        else:
            mbarrier.arrive(hfree.index(0))
            mbarrier.arrive(hfree.index(1))
        n += 1


@gluon.jit
def _gemm_ws_epi_kernel(a_desc, b_desc, r_ptr, y_ptr, bias_ptr, M, N, stride_rm, stride_ym, scale, n_tiles,
                        n_blocks_m, K_STEPS: gl.constexpr, N_BLOCKS_N: gl.constexpr, STAGES: gl.constexpr,
                        GROUP_M: gl.constexpr, CHUNK: gl.constexpr, EPI_WARPS: gl.constexpr, MMA_REGS: gl.constexpr,
                        EPI_REGS: gl.constexpr, LOADER_REGS: gl.constexpr, AHEAD: gl.constexpr, SKIP: gl.constexpr,
                        PART: gl.constexpr):
    """Warp-specialised with the epilogue apart: two MMA warp groups (the library's, handing x W^T + b on through
    hbuf), EPI_WARPS epilogue warps and a loader warp in a third warp group (16 warps would cap every thread at 128
    registers, and one 64x256 wgmma's accumulator alone is 128)."""
    BM: gl.constexpr = a_desc.block_type.shape[0]
    BN: gl.constexpr = b_desc.block_type.shape[0]
    dtype: gl.constexpr = a_desc.dtype
    a_bufs, b_bufs = _operand_rings(a_desc, b_desc, STAGES)
    hbuf = gl.allocate_shared_memory(dtype, [BM, BN], gl.NVMMASharedLayout.get_default_for([BM, BN], dtype))
    ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    hfull = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    hfree = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())  # one a MMA warp group
    for i in gl.static_range(STAGES):
        mbarrier.init(ready.index(i), count=1)
        mbarrier.init(empty.index(i), count=2)
    mbarrier.init(hfull, count=2)  # both MMA warp groups have written their rows
    for i in gl.static_range(2):
        mbarrier.init(hfree.index(i), count=1)
    fence_async_shared()
    gl.warp_specialize([
        # (the library's last-tile share, TAIL_ROWS, left at 64: every tile's epilogue is _epi_worker's here)
        (_mma_group, (a_bufs, b_bufs, ready, empty, hbuf, hfull, hfree, bias_ptr, r_ptr, y_ptr, M, N, stride_rm,
                      stride_ym, scale, n_tiles, n_blocks_m, 0, K_STEPS, N_BLOCKS_N, STAGES, GROUP_M, True, True,
                      "none", 1, 64)),
        (_mma_group, (a_bufs, b_bufs, ready, empty, hbuf, hfull, hfree, bias_ptr, r_ptr, y_ptr, M, N, stride_rm,
                      stride_ym, scale, n_tiles, n_blocks_m, 1, K_STEPS, N_BLOCKS_N, STAGES, GROUP_M, True, True,
                      "none", 1, 64)),
        (_epi_worker, (hbuf, hfull, hfree, r_ptr, y_ptr, M, N, stride_rm, stride_ym, scale, n_tiles, n_blocks_m,
                       N_BLOCKS_N, GROUP_M, CHUNK, AHEAD, SKIP, PART)),
        (_ws_loader, (a_desc, b_desc, a_bufs, b_bufs, ready, empty, n_tiles, n_blocks_m, K_STEPS, N_BLOCKS_N,
                       STAGES, GROUP_M)),
    ], [4, EPI_WARPS, 1], [MMA_REGS, EPI_REGS, LOADER_REGS])


def gluon_gemm_ws_epi(x, w, b, r, scale, BM=128, BN=256, BK=64, STAGES=3, GROUP_M=8, CHUNK=8, EPI_WARPS=2,
                      MMA_REGS=208, EPI_REGS=96, LOADER_REGS=96, AHEAD=False, SKIP=False, PART="all"):
    M, K = x.shape
    N = w.shape[0]
    y = torch.empty((M, N), device=x.device, dtype=x.dtype)
    a_desc = TensorDescriptor.from_tensor(x, [BM, BK], gl.NVMMASharedLayout.get_default_for([BM, BK], gl.bfloat16))
    b_desc = TensorDescriptor.from_tensor(w, [BN, BK], gl.NVMMASharedLayout.get_default_for([BN, BK], gl.bfloat16))
    n_bm, n_bn = triton.cdiv(M, BM), triton.cdiv(N, BN)
    n_tiles = n_bm * n_bn
    sms = torch.cuda.get_device_properties(x.device).multi_processor_count
    compiled = _gemm_ws_epi_kernel[(min(sms, n_tiles),)](
        a_desc, b_desc, r, y, b, M, N, r.stride(0), y.stride(0), float(scale), n_tiles, n_bm,
        K_STEPS=triton.cdiv(K, BK), N_BLOCKS_N=n_bn, STAGES=STAGES, GROUP_M=GROUP_M, CHUNK=CHUNK, EPI_WARPS=EPI_WARPS,
        MMA_REGS=MMA_REGS, EPI_REGS=EPI_REGS, LOADER_REGS=LOADER_REGS, AHEAD=AHEAD, SKIP=SKIP, PART=PART,
        num_warps=4)
    LAST_COMPILED[0] = compiled
    return y


@gluon.jit
def _chunk(start, hi, n_units_m, WGS: gl.constexpr):
    """(column block, first 64-row unit, units) of the chunk starting at unit `start`: up to WGS units of one column
    block, not past this program's last unit `hi`."""
    nb = start // n_units_m
    mu = start - nb * n_units_m
    cnt = gl.minimum(gl.minimum(hi - start, (nb + 1) * n_units_m - start), WGS)
    return nb, mu, cnt


@gluon.jit
def _ws3_issue(a_desc, b_desc, a_bufs, b_bufs, ready, empty, lit, l_start, lk, hi, n_units_m, K_STEPS: gl.constexpr,
               STAGES: gl.constexpr, WGS: gl.constexpr):
    """The loads of flat k-step `lit` (k-step lk of the chunk starting at unit l_start), if there is one: one W box,
    shared by the chunk's warp groups, and one x box per 64-row unit; (l_start, lk) of the next flat k-step."""
    ROWS: gl.constexpr = a_desc.block_type.shape[0]
    BK: gl.constexpr = a_desc.block_type.shape[1]
    BN: gl.constexpr = b_desc.block_type.shape[0]
    A_BYTES: gl.constexpr = a_desc.block_type.nbytes
    B_BYTES: gl.constexpr = b_desc.block_type.nbytes
    if l_start < hi:
        nb, mu, cnt = _chunk(l_start, hi, n_units_m, WGS)
        s = lit % STAGES
        bar = ready.index(s)
        # the slot is free once every warp group released its last use (the first round passes at once)
        mbarrier.wait(empty.index(s), ((lit // STAGES) & 1) ^ 1)
        for c in gl.static_range(1, WGS + 1):  # one arrive-and-expect: the bytes of this chunk's boxes
            mbarrier.expect(bar, c * A_BYTES + B_BYTES, cnt == c)
        _tma_load(b_desc, [nb * BN, lk * BK], bar, b_bufs.index(s))
        for c in gl.static_range(WGS):
            _tma_load(a_desc, [(mu + c) * ROWS, lk * BK], bar, a_bufs.index(s * WGS + c), c < cnt)
        lk += 1
        if lk == K_STEPS:
            lk = 0
            l_start += cnt
    return l_start, lk


@gluon.jit
def _ws3_epilogue_regs(acc, cols, row0, r_ptr, y_ptr, M, N, stride_rm, stride_ym, scale, EVEN: gl.constexpr):
    """gelu(h) * scale + residual straight from the accumulator's registers (h: x W^T + b rounded to 16 bits, as
    eager's linear hands it on); no staging buffer, so the 96 KB go to operand stages. EVEN (M a multiple of 64, N
    of BN): no masks, whose 128 predicates a thread made ptxas spill 1.4-3.1 KB at 168 registers."""
    dtype: gl.constexpr = y_ptr.dtype.element_ty
    rows = row0 + gl.arange(0, acc.shape[0], layout=gl.SliceLayout(1, acc.type.layout))
    y = _gelu_scaled(acc.to(dtype).to(gl.float32), scale).to(dtype)
    r_ptrs = r_ptr + gl.expand_dims(rows * stride_rm, 1) + gl.expand_dims(cols, 0)
    y_ptrs = y_ptr + gl.expand_dims(rows * stride_ym, 1) + gl.expand_dims(cols, 0)
    if EVEN:
        out = (y.to(gl.float32) + gl.load(r_ptrs).to(gl.float32)).to(dtype)
        gl.store(y_ptrs, out)
    else:
        mask = gl.expand_dims(rows < M, 1) & gl.expand_dims(cols < N, 0)
        out = (y.to(gl.float32) + gl.load(r_ptrs, mask=mask, other=0.0).to(gl.float32)).to(dtype)
        gl.store(y_ptrs, out, mask=mask)


@gluon.jit
def _ws3_epilogue_halves(acc, col0, row0, r_ptr, y_ptr, M, N, stride_rm, stride_ym, scale, EVEN: gl.constexpr):
    """_ws3_epilogue_regs on each 128-column half of the accumulator in turn (split along a register index, so no
    data moves): the residual and output addresses of half the tile are live at once, not all 128 a thread."""
    ROWS: gl.constexpr = acc.shape[0]
    BN: gl.constexpr = acc.shape[1]
    lo, hi = gl.split(gl.permute(gl.reshape(acc, [ROWS, 2, BN // 2]), (0, 2, 1)))
    cols = col0 + gl.arange(0, BN // 2, layout=gl.SliceLayout(0, lo.type.layout))
    _ws3_epilogue_regs(lo, cols, row0, r_ptr, y_ptr, M, N, stride_rm, stride_ym, scale, EVEN)
    _ws3_epilogue_regs(hi, cols + BN // 2, row0, r_ptr, y_ptr, M, N, stride_rm, stride_ym, scale, EVEN)


@gluon.jit
def _ws3_epilogue_smem(acc, h, col0, row0, r_ptr, y_ptr, M, N, stride_rm, stride_ym, scale, CHUNK: gl.constexpr):
    """The same through the warp group's staging buffer h: h in, then CHUNK-row slices with coalesced 16-byte
    residual loads and output stores."""
    dtype: gl.constexpr = y_ptr.dtype.element_ty
    ROWS: gl.constexpr = acc.shape[0]
    BN: gl.constexpr = acc.shape[1]
    io_layout: gl.constexpr = gl.BlockedLayout([1, 8], [1, 32], [4, 1], [1, 0])
    io_rows0 = gl.arange(0, CHUNK, layout=gl.SliceLayout(1, io_layout))
    io_cols = col0 + gl.arange(0, BN, layout=gl.SliceLayout(0, io_layout))
    _cta_barrier()  # every warp of the group has read the last chunk's rows out of the buffer
    h.store(acc.to(dtype))
    _cta_barrier()
    for c in gl.static_range(ROWS // CHUNK):
        v = h.slice(c * CHUNK, CHUNK).load(io_layout).to(gl.float32)
        y = _gelu_scaled(v, scale).to(dtype)
        rows = row0 + c * CHUNK + io_rows0
        mask = gl.expand_dims(rows < M, 1) & gl.expand_dims(io_cols < N, 0)
        r = gl.load(r_ptr + gl.expand_dims(rows * stride_rm, 1) + gl.expand_dims(io_cols, 0), mask=mask, other=0.0)
        out = (y.to(gl.float32) + r.to(gl.float32)).to(dtype)
        gl.store(y_ptr + gl.expand_dims(rows * stride_ym, 1) + gl.expand_dims(io_cols, 0), out, mask=mask)


@gluon.jit
def _ws3_consumer(a_desc, b_desc, r_desc, y_desc, a_bufs, b_bufs, ready, empty, h_bufs, r_bars, bias_ptr, r_ptr, y_ptr,
                  M, N, stride_rm, stride_ym, scale, n_units_m, n_units, WG: gl.constexpr, K_STEPS: gl.constexpr,
                  STAGES: gl.constexpr, WGS: gl.constexpr, CHUNK: gl.constexpr, EVEN: gl.constexpr):
    # One warp group: unit WG of each chunk (64 rows x BN); where a chunk has fewer units it only passes the
    # chunk's stages back (the empty barriers count one arrival per warp group). Warp group 0 (always busy: every
    # chunk has a unit 0) also issues the loads, STAGES - 1 k-steps ahead: a loader warp of its own would make 13
    # warps, launched as 16, and 16 warps cap every thread at 128 registers, under what a 64x256 wgmma needs (154).
    # The epilogue (see WS3_CONFIGS): CHUNK 0 straight from the accumulator's registers, 1 the same a column half
    # at a time, 2 the residual in and the output out by TMA through the warp group's staging buffer (as the
    # two-consumer form), 8 through that buffer in 8-row slices by pointer loads and stores; each on x W^T + b
    # rounded to 16 bits, as eager's linear hands it to its GELU.
    ROWS: gl.constexpr = a_desc.block_type.shape[0]
    BN: gl.constexpr = b_desc.block_type.shape[0]
    acc_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1],
                                                         instr_shape=[16, BN, 16])
    h = h_bufs.index(WG if CHUNK >= 2 else 0)
    r_bar = r_bars.index(WG)
    n_done = 0
    cols0 = gl.arange(0, BN, layout=gl.SliceLayout(0, acc_layout))
    pid = gl.program_id(0)
    n_progs = gl.num_programs(0)
    hi = (pid + 1) * n_units // n_progs
    start = pid * n_units // n_progs
    it = 0
    l_start = start  # the load cursor (warp group 0): flat k-step it + STAGES - 1
    lk = 0
    if WG == 0:
        for i in gl.static_range(STAGES - 1):
            l_start, lk = _ws3_issue(a_desc, b_desc, a_bufs, b_bufs, ready, empty, i, l_start, lk, hi, n_units_m,
                                     K_STEPS, STAGES, WGS)
    while start < hi:
        nb, mu, cnt = _chunk(start, hi, n_units_m, WGS)
        if WG < cnt:
            cols = nb * BN + cols0
            rows0 = (mu + WG) * ROWS
            bias = gl.load(bias_ptr + cols, mask=cols < N, other=0.0).to(gl.float32)
            acc = gl.zeros([ROWS, BN], gl.float32, acc_layout) + gl.expand_dims(bias, 0)
            if CHUNK == 2:  # the residual comes by TMA into the buffer the last output has left, during the K loop
                tma.store_wait(pendings=0)
                mbarrier.expect(r_bar, r_desc.block_type.nbytes)
                _tma_load(r_desc, [rows0, nb * BN], r_bar, h)
            for k in range(K_STEPS):
                s = it % STAGES
                mbarrier.wait(ready.index(s), (it // STAGES) & 1)
                acc = warpgroup_mma(a_bufs.index(s * WGS + WG), b_bufs.index(s).permute((1, 0)), acc, is_async=True)
                acc = warpgroup_mma_wait(1, deps=(acc,))
                if k > 0:  # the MMA before this one is done: its stage goes back to the loader
                    mbarrier.arrive(empty.index((it - 1) % STAGES))
                if WG == 0:
                    l_start, lk = _ws3_issue(a_desc, b_desc, a_bufs, b_bufs, ready, empty, it + STAGES - 1, l_start,
                                             lk, hi, n_units_m, K_STEPS, STAGES, WGS)
                it += 1
            acc = warpgroup_mma_wait(0, deps=(acc,))
            mbarrier.arrive(empty.index((it - 1) % STAGES))
            if CHUNK == 0:
                _ws3_epilogue_regs(acc, cols, rows0, r_ptr, y_ptr, M, N, stride_rm, stride_ym, scale, EVEN)
            elif CHUNK == 1:
                _ws3_epilogue_halves(acc, nb * BN, rows0, r_ptr, y_ptr, M, N, stride_rm, stride_ym, scale, EVEN)
            elif CHUNK == 2:  # as the two-consumer form: the output leaves through the buffer by TMA
                y = _gelu_scaled(acc.to(y_desc.dtype).to(gl.float32), scale).to(y_desc.dtype)
                mbarrier.wait(r_bar, n_done & 1)
                out = (y.to(gl.float32) + h.load(acc_layout).to(gl.float32)).to(y_desc.dtype)
                _cta_barrier()  # this warp group has read the residual before the buffer takes the output
                h.store(out)
                fence_async_shared()
                _tma_store(y_desc, [rows0, nb * BN], h)
                n_done += 1
            else:
                _ws3_epilogue_smem(acc, h, nb * BN, rows0, r_ptr, y_ptr, M, N, stride_rm, stride_ym, scale, CHUNK)
        else:
            for k in range(K_STEPS):
                s = it % STAGES
                mbarrier.wait(ready.index(s), (it // STAGES) & 1)
                mbarrier.arrive(empty.index(s))
                it += 1
        start += cnt
    tma.store_wait(pendings=0)


@gluon.jit
def _gemm_ws3_kernel(a_desc, b_desc, r_desc, y_desc, bias_ptr, r_ptr, y_ptr, M, N, stride_rm, stride_ym, scale,
                     n_units_m, n_units, K_STEPS: gl.constexpr, STAGES: gl.constexpr, CHUNK: gl.constexpr,
                     EVEN: gl.constexpr):
    """Three warp groups sharing each W stage (chunks of up to 192x256; the first also loads); each program
    takes an even share of the 64-row units in column-block-major order, so its work is balanced to a unit (not to
    a 192-row tile: 342 such tiles on 132 SMs would be 3 rounds of 2.6), and programs p and p + P/2 read the same
    x rows at about the same time (so x can come from DRAM once)."""
    WGS: gl.constexpr = 3
    ROWS: gl.constexpr = a_desc.block_type.shape[0]
    BN: gl.constexpr = b_desc.block_type.shape[0]
    dtype: gl.constexpr = a_desc.dtype
    a_bufs = gl.allocate_shared_memory(dtype, [STAGES * WGS] + a_desc.block_type.shape, a_desc.layout)
    b_bufs = gl.allocate_shared_memory(dtype, [STAGES] + b_desc.block_type.shape, b_desc.layout)
    # the epilogue's 16-bit staging buffers (CHUNK 0 and 1: none; 2: the residual in and the output out by TMA;
    # 8: read back in 8-row slices)
    h_bufs = gl.allocate_shared_memory(dtype, [WGS if CHUNK >= 2 else 1, ROWS if CHUNK >= 2 else 8, BN],
                                       gl.NVMMASharedLayout.get_default_for([ROWS, BN], dtype))
    ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(STAGES):
        mbarrier.init(ready.index(i), count=1)
        mbarrier.init(empty.index(i), count=WGS)  # one arrival from each warp group
    r_bars = gl.allocate_shared_memory(gl.int64, [WGS, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(WGS):
        mbarrier.init(r_bars.index(i), count=1)
    fence_async_shared()
    gl.warp_specialize([
        (_ws3_consumer, (a_desc, b_desc, r_desc, y_desc, a_bufs, b_bufs, ready, empty, h_bufs, r_bars, bias_ptr, r_ptr,
                         y_ptr, M, N, stride_rm, stride_ym, scale, n_units_m, n_units, 0, K_STEPS, STAGES, WGS, CHUNK,
                         EVEN)),
        (_ws3_consumer, (a_desc, b_desc, r_desc, y_desc, a_bufs, b_bufs, ready, empty, h_bufs, r_bars, bias_ptr, r_ptr,
                         y_ptr, M, N, stride_rm, stride_ym, scale, n_units_m, n_units, 1, K_STEPS, STAGES, WGS, CHUNK,
                         EVEN)),
        (_ws3_consumer, (a_desc, b_desc, r_desc, y_desc, a_bufs, b_bufs, ready, empty, h_bufs, r_bars, bias_ptr, r_ptr,
                         y_ptr, M, N, stride_rm, stride_ym, scale, n_units_m, n_units, 2, K_STEPS, STAGES, WGS, CHUNK,
                         EVEN)),
    ], [4, 4], [168, 168])  # all three at what 384 threads get anyway (triton 3.6 needs the list)


def gluon_gemm_ws3(x, w, b, r, scale, BN=256, BK=64, STAGES=4, CHUNK=1, programs=0):
    ROWS = 64
    M, K = x.shape
    N = w.shape[0]
    y = torch.empty((M, N), device=x.device, dtype=x.dtype)
    a_desc = TensorDescriptor.from_tensor(x, [ROWS, BK], gl.NVMMASharedLayout.get_default_for([ROWS, BK], gl.bfloat16))
    b_desc = TensorDescriptor.from_tensor(w, [BN, BK], gl.NVMMASharedLayout.get_default_for([BN, BK], gl.bfloat16))
    ry_layout = gl.NVMMASharedLayout.get_default_for([ROWS, BN], gl.bfloat16)  # the staging buffers' layout
    r_desc = TensorDescriptor.from_tensor(r, [ROWS, BN], ry_layout)
    y_desc = TensorDescriptor.from_tensor(y, [ROWS, BN], ry_layout)
    n_units_m = triton.cdiv(M, ROWS)
    n_units = n_units_m * triton.cdiv(N, BN)
    sms = torch.cuda.get_device_properties(x.device).multi_processor_count
    compiled = _gemm_ws3_kernel[(min(programs or sms, n_units),)](
        a_desc, b_desc, r_desc, y_desc, b, r, y, M, N, r.stride(0), y.stride(0), float(scale), n_units_m, n_units,
        K_STEPS=triton.cdiv(K, BK), STAGES=STAGES, CHUNK=CHUNK, EVEN=M % ROWS == 0 and N % BN == 0, num_warps=4)
    LAST_COMPILED[0] = compiled
    return y


def gluon_gemm(x, w, b, r, scale, BM=128, BN=256, BK=64, STAGES=3, GROUP_M=8, num_warps=8):
    M, K = x.shape
    N = w.shape[0]
    y = torch.empty((M, N), device=x.device, dtype=x.dtype)
    a_layout = gl.NVMMASharedLayout.get_default_for([BM, BK], gl.bfloat16)
    b_layout = gl.NVMMASharedLayout.get_default_for([BN, BK], gl.bfloat16)
    y_layout = gl.NVMMASharedLayout.get_default_for([BM, BN], gl.bfloat16)
    a_desc = TensorDescriptor.from_tensor(x, [BM, BK], a_layout)
    b_desc = TensorDescriptor.from_tensor(w, [BN, BK], b_layout)
    r_desc = TensorDescriptor.from_tensor(r, [BM, BN], y_layout)
    y_desc = TensorDescriptor.from_tensor(y, [BM, BN], y_layout)
    n_bm, n_bn = triton.cdiv(M, BM), triton.cdiv(N, BN)
    n_tiles = n_bm * n_bn
    sms = torch.cuda.get_device_properties(x.device).multi_processor_count
    compiled = _gemm_gelu_residual_kernel[(min(sms, n_tiles),)](
        a_desc, b_desc, r_desc, y_desc, b, N, float(scale), n_tiles, n_bm, K_STEPS=triton.cdiv(K, BK), N_BLOCKS_N=n_bn,
        STAGES=STAGES, GROUP_M=GROUP_M, num_warps=num_warps)
    LAST_COMPILED[0] = compiled
    return y


LAST_COMPILED = [None]
# 4 stages: 262 KB of shared memory. AHEAD: residual slices loaded ahead and each MMA group's half of the buffer
# freed once read; its epilogue warps then need 152 registers (the MMA groups are compiled to 168 anyway)
_AHEAD = {"AHEAD": True, "MMA_REGS": 168, "EPI_REGS": 152, "LOADER_REGS": 152}
EPI_CONFIGS = [{"STAGES": 3, "GROUP_M": 8}, {"STAGES": 3, "GROUP_M": 1}, {"STAGES": 3, "GROUP_M": 1, **_AHEAD},
               {"STAGES": 3, "GROUP_M": 8, **_AHEAD}, {"STAGES": 3, "GROUP_M": 1, "SKIP": True}]
# the epilogue warps' parts, timed apart (wrong outputs; see _epi_worker); compiled for sm_90: no spills but
# "l2res" (240 bytes), "math" keeps its 512 tanh a tile a thread. Session 15 ran them with 176 registers for the
# epilogue warps (--epi-configs; gluon-gemm-probe-h200-20261201T231628Z.json)
EPI_PART_CONFIGS = [{"STAGES": 3, "GROUP_M": 1, **_AHEAD, "PART": part} for part in ("math", "memory", "l2res")]
# 128x128 tiles (4 stages fit): with four epilogue warps (16 warps, 128 registers each: a 64x128 accumulator is 64),
# so the epilogue is spread over all four of an SM's schedulers instead of two, and with two (the control).
# Session 16 (--timer cudagraph, gluon-gemm-probe-h200-20261202T015056Z.json): four 0.1206-0.1215 ms, two
# 0.1228-0.1252, the 128x256 AHEAD form 0.1185-0.1204: four warps help at 128x128, not past the larger tiles
EPI_NARROW_CONFIGS = [{"BN": 128, "STAGES": 4, "GROUP_M": 1, "AHEAD": True, "EPI_WARPS": 4, "MMA_REGS": 128,
                       "EPI_REGS": 128, "LOADER_REGS": 128},
                      {"BN": 128, "STAGES": 4, "GROUP_M": 1, **_AHEAD}]
# EPI_REGS: the epilogue from registers, so 4 stages fit (the TMA residual/output buffers leave room for 3)
# EPI_NONE: x W^T + b alone (compare with ours_bias): the main loop without the epilogue
WS_CONFIGS = [{"BK": 64, "STAGES": 3, "GROUP_M": 8}, {"BK": 64, "STAGES": 3, "GROUP_M": 1},
              {"BK": 64, "STAGES": 4, "GROUP_M": 8, "EPI_REGS": True}, {"BK": 64, "STAGES": 3, "GROUP_M": 1, "EPI_NONE": True},
              {"BK": 64, "STAGES": 3, "GROUP_M": 1, "GELU": "bf16x2"}, {"BK": 64, "STAGES": 3, "GROUP_M": 1, "GELU": "none"}]
CONFIGS = [{"BK": 64, "STAGES": 3, "GROUP_M": 1}, {"BK": 32, "STAGES": 6, "GROUP_M": 8}]  # 4 stages of 64 do not fit beside the 64 KiB output tile
# CHUNK 0: the epilogue straight from registers (4 stages of 64 fit: 229 KB), 1: the same in two column halves (no
# spills), 2: through the staging buffers by TMA (96 KB of them: 4 stages of 32 or 2 of 64), 8: 8-row slices of the
# staging buffers by pointer loads and stores
WS3_CONFIGS = [{"BK": 64, "STAGES": 4, "CHUNK": 1}, {"BK": 32, "STAGES": 4, "CHUNK": 2}, {"BK": 32, "STAGES": 4, "CHUNK": 8}]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="")
    parser.add_argument("--forms", default="", help="comma-separated name prefixes to run (default: all), e.g. gluon_ws3,ours")
    parser.add_argument("--shapes", default="32768x2048x512,4096x4096x4096", help="MxKxN,...")
    parser.add_argument("--ws3-configs", default="", help="JSON list replacing WS3_CONFIGS")
    parser.add_argument("--epi-configs", default="",
                        help="JSON list replacing EPI_CONFIGS + EPI_PART_CONFIGS + EPI_NARROW_CONFIGS")
    parser.add_argument("--timer", choices=("do_bench", "cudagraph"), default="do_bench",
                        help="cudagraph: triton.testing.do_bench_cudagraph (the calls replayed from a CUDA graph, so "
                             "no host launch time reaches the GPU: the JIT's ~0.1-0.2 ms a launch is of the tall "
                             "kernel's order)")
    args = parser.parse_args(argv)
    ws3_configs = json.loads(args.ws3_configs) if args.ws3_configs else WS3_CONFIGS
    epi_configs = (json.loads(args.epi_configs) if args.epi_configs
                   else EPI_CONFIGS + EPI_PART_CONFIGS + EPI_NARROW_CONFIGS)
    forms = [f for f in args.forms.split(",") if f]
    kernel = _LIB
    rows = []
    for m, k, n in [tuple(int(v) for v in shape.split("x")) for shape in args.shapes.split(",")]:
        torch.manual_seed(0)
        x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        w = (torch.randn(n, k, device="cuda") / k**0.5).to(torch.bfloat16)
        b = torch.randn(n, device="cuda", dtype=torch.bfloat16)
        r = torch.randn(m, n, device="cuda", dtype=torch.bfloat16)
        ref_bias = x.float() @ w.float().T + b.float()  # what the *_bias forms compute
        ref = torch.nn.functional.gelu(ref_bias) * 0.5 + r.float()
        calls = {f"gluon_bk{c['BK']}_s{c['STAGES']}_g{c['GROUP_M']}": (lambda c=c: gluon_gemm(x, w, b, r, 0.5, **c)) for c in CONFIGS}
        for c in WS_CONFIGS:
            name = (f"gluon_ws_bk{c['BK']}_s{c['STAGES']}_g{c['GROUP_M']}" + ("_regs" if c.get("EPI_REGS") else "")
                    + ("_bias" if c.get("EPI_NONE") else "") + (f"_gelu_{c['GELU']}" if c.get("GELU") else ""))
            calls[name] = lambda c=c: gluon_gemm_ws(x, w, b, r, 0.5, **c)
        for c in epi_configs:
            calls["gluon_ws_epi_" + "_".join(f"{k}{v}" for k, v in c.items())] = \
                lambda c=c: gluon_gemm_ws_epi(x, w, b, r, 0.5, **c)
        for c in ws3_configs:
            calls["gluon_ws3_" + "_".join(f"{k}{v}" for k, v in c.items())] = \
                lambda c=c: gluon_gemm_ws3(x, w, b, r, 0.5, **c)
        calls["ours_triton"] = lambda: kernel.gemm_epilogue(x, w, b, r, 0.5, "gelu")
        calls["ours_triton_bias"] = lambda: kernel.gemm_epilogue(x, w, b)
        calls["cublas_linear"] = lambda: torch.nn.functional.linear(x, w)
        if forms:
            calls = {name: fn for name, fn in calls.items()
                     if name == "cublas_linear" or any(name.startswith(f) for f in forms)}
        row = {"shape": [m, k, n]}
        for name, fn in calls.items():
            if name == "cublas_linear":
                continue
            out = fn()
            torch.cuda.synchronize()
            row[f"{name}_max_abs_err"] = (out.float() - (ref_bias if name.endswith("_bias") else ref)).abs().max().item()
            if name.startswith("gluon"):  # the last compiled kernel is this call's
                c = LAST_COMPILED[0]
                row[f"{name}_regs_spills_smem"] = [c.n_regs, c.n_spills, c.metadata.shared]
        times = {name: [] for name in calls}
        for _ in range(5):  # alternating runs
            for name, fn in calls.items():
                if args.timer == "cudagraph":
                    times[name].append(triton.testing.do_bench_cudagraph(fn, rep=100, return_mode="median"))
                else:
                    times[name].append(triton.testing.do_bench(fn, warmup=25, rep=100))
        row["ms"] = times
        row["median_ms"] = {name: sorted(v)[len(v) // 2] for name, v in times.items()}
        print(json.dumps(row), flush=True)
        rows.append(row)
    if args.out:
        method = ("triton.testing.do_bench_cudagraph(rep=100, median)" if args.timer == "cudagraph"
                  else "triton.testing.do_bench(warmup=25, rep=100)")
        write_record(args.out, __file__, argv, method + ", 5 alternating runs", rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
