"""Probe: a persistent bf16 GEMM with the gemm_epilogue spec's epilogue written in Gluon (Triton's lower-level
dialect: explicit shared memory, mbarriers, TMA and wgmma), against our Triton kernel and cuBLAS, Hopper only.

What it tries that the Triton kernel cannot express with triton 3.6: one flat loop over (tile, k-step) pairs, so
the TMA loads of the next tile's first k-steps are in flight while this tile's epilogue runs, and the residual tile
is fetched by TMA when a tile starts (into the buffer its output leaves from), so the epilogue never waits on it.

Measured on the H200 (triton 3.6, `benchmarks/results/gluon-gemm-probe-h200-20261201T1503Z.json`): correct (the
same max error as our kernel on the tall shape), not faster: 4096^3 0.227-0.267 ms (64-deep K steps, 3 stages)
against our Triton kernel's 0.205-0.221 in the same alternating runs; the tall shape within that box's noise (0.178-0.250 against 0.185-0.205, on
a box that timed our kernel 1.6x slower than the harness runs do). What it lacks is what cuBLAS has: warp groups
specialised into a TMA producer and MMA consumers (gl.warp_specialize), the natural next step from here.

Usage (GPU box, repo root): python3 benchmarks/gpu/gluon_gemm_probe.py [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import fence_async_shared, mbarrier, tma, warpgroup_mma, \
    warpgroup_mma_wait
from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

REPO = Path(__file__).resolve().parents[2]


@gluon.jit
def _tile_of(tile, n_blocks_m, n_blocks_n, GROUP_M: gl.constexpr):
    per_group = GROUP_M * n_blocks_n
    first_m = (tile // per_group) * GROUP_M
    rows = gl.minimum(n_blocks_m - first_m, GROUP_M)
    return first_m + (tile % per_group) % rows, (tile % per_group) // rows


@gluon.jit
def _issue(a_desc, b_desc, it, lk, lpm, lpn, total, bars, a_bufs, b_bufs, STAGES: gl.constexpr, BM: gl.constexpr,
           BN: gl.constexpr, BK: gl.constexpr):
    # the loads of flat iteration `it` (k-step lk of the tile at block (lpm, lpn)), if it exists
    s = it % STAGES
    ok = it < total
    bar = bars.index(s)
    mbarrier.expect(bar, a_desc.block_type.nbytes + b_desc.block_type.nbytes, ok)
    tma.async_copy_global_to_shared(a_desc, [lpm * BM, lk * BK], bar, a_bufs.index(s), ok)
    tma.async_copy_global_to_shared(b_desc, [lpn * BN, lk * BK], bar, b_bufs.index(s), ok)


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
    a_bufs = gl.allocate_shared_memory(dtype, [STAGES, BM, BK], a_desc.layout)
    b_bufs = gl.allocate_shared_memory(dtype, [STAGES, BN, BK], b_desc.layout)
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
    # load side: flat iteration `li`, its k-step lk and tile (ltile, lpm, lpn)
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
            tma.async_copy_global_to_shared(r_desc, [pm * BM, pn * BN], r_bar, ry_buf)
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
            half = (0.5 * scale) * acc
            inner = acc * (0.7978845608028654 + 0.035677408136300125 * acc * acc)
            th = gl.inline_asm_elementwise("tanh.approx.f32 $0, $1;", "=f,f", [inner], dtype=gl.float32,
                                           is_pure=True, pack=1)
            y = (half + half * th).to(dtype)
            mbarrier.wait(r_bar, n_done & 1)
            r = ry_buf.load(acc_layout)
            out = (y.to(gl.float32) + r.to(gl.float32)).to(dtype)
            gl.thread_barrier()  # every warp has read the residual before the buffer takes the output
            ry_buf.store(out)
            fence_async_shared()
            tma.async_copy_shared_to_global(y_desc, [pm * BM, pn * BN], ry_buf)
            kk = 0
            n_done += 1
            tile += n_progs
            pm, pn = _tile_of(tile, n_blocks_m, N_BLOCKS_N, GROUP_M)
    tma.store_wait(pendings=0)


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
CONFIGS = [{"BK": 64, "STAGES": 3, "GROUP_M": 1}, {"BK": 32, "STAGES": 6, "GROUP_M": 8}]  # 4 stages of 64 do not fit beside the 64 KiB output tile


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(REPO))
    from harness.spec import import_file

    kernel = import_file(REPO / "corpus/kernels/gemm_epilogue/kernel.py", "gluon_probe_ours")
    rows = []
    for m, k, n in [(32768, 2048, 512), (4096, 4096, 4096)]:
        torch.manual_seed(0)
        x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        w = (torch.randn(n, k, device="cuda") / k**0.5).to(torch.bfloat16)
        b = torch.randn(n, device="cuda", dtype=torch.bfloat16)
        r = torch.randn(m, n, device="cuda", dtype=torch.bfloat16)
        ref = (torch.nn.functional.gelu(x.float() @ w.float().T + b.float()) * 0.5 + r.float())
        calls = {f"gluon_bk{c['BK']}_s{c['STAGES']}_g{c['GROUP_M']}": (lambda c=c: gluon_gemm(x, w, b, r, 0.5, **c)) for c in CONFIGS}
        calls["ours_triton"] = lambda: kernel.gemm_epilogue(x, w, b, r, 0.5, "gelu")
        calls["cublas_linear"] = lambda: torch.nn.functional.linear(x, w)
        row = {"shape": [m, k, n]}
        for name, fn in calls.items():
            if name == "cublas_linear":
                continue
            out = fn()
            torch.cuda.synchronize()
            row[f"{name}_max_abs_err"] = (out.float() - ref).abs().max().item()
            if name.startswith("gluon"):
                c = LAST_COMPILED[0]
                row[f"{name}_regs_spills_smem"] = [c.n_regs, c.n_spills, c.metadata.shared]
        times = {name: [] for name in calls}
        for _ in range(5):  # alternating runs
            for name, fn in calls.items():
                times[name].append(triton.testing.do_bench(fn, warmup=25, rep=100))
        row["ms"] = times
        row["median_ms"] = {name: sorted(v)[len(v) // 2] for name, v in times.items()}
        print(json.dumps(row), flush=True)
        rows.append(row)
    if args.out:
        Path(args.out).write_text(json.dumps({"command": "python3 benchmarks/gpu/gluon_gemm_probe.py",
                                              "device": torch.cuda.get_device_name(),
                                              "versions": {"torch": torch.__version__, "triton": triton.__version__},
                                              "method": "triton.testing.do_bench(warmup=25, rep=100), 5 alternating runs",
                                              "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
