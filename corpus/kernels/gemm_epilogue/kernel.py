"""GEMM with a fused epilogue: y = act(x @ W^T + b) * scale + residual [-> row sum], in one Triton kernel.

Usage: a KernelBench-format candidate; the harness loads it next to a spec from ./specs/, e.g.
    python -m harness.cli eval corpus/kernels/gemm_epilogue/specs/linear_gelu_bf16_4096.py \
        corpus/kernels/gemm_epilogue/kernel.py

Why fuse: eager runs cuBLAS addmm, then the activation, the scale and the residual add as separate
kernels; each reads and writes the M x N output once more (3 extra round trips of M*N*elem bytes plus
the residual read). Here the accumulator stays in registers and the output is written once.

fp32 inputs use input_precision="tf32x3" by default: error-compensated 3xTF32 (three tensor-core products
of TF32 high and remainder parts), fp32-level error, not plain TF32 (benchmarks/gpu/gemm_precision.py
measures it against float64 next to cuBLAS fp32); "ieee" (true fp32 FMA) stays selectable; plain TF32 is
refused. bf16/fp16 use tensor cores with an fp32 accumulator. Tiles and strategy come from TUNABLES: the
plain keys, the `TALL_` keys for tall and skinny bf16/fp16 problems (M >= 8 N), the `FP32_` keys for fp32.

On Hopper (sm_90), tall 16-bit problems without the row sum: TALL_HOPPER_WS runs a warp-specialised Gluon kernel
(Triton 3.6 does not generate this split from the kernels above): a TMA loader warp fills a ring of x and W tiles;
two MMA warp groups, 64 rows of a 128x256 tile each, hand x W^T + b, rounded to 16 bits as eager's linear hands it
on, through shared memory to two epilogue warps and start the next tile at once; the epilogue warps apply the
activation, the scale and the residual (loaded a slice ahead) while the next tile's MMAs run. Everything else (the
CPU interpreter, fp32, the row sum, square shapes, other GPUs) runs the Triton kernels.
"""

import torch
import triton
import triton.language as tl
from torch import nn

try:  # host-side TMA descriptors (triton >= 3.3); without them the pointer path runs
    from triton.tools.tensor_descriptor import TensorDescriptor
except ImportError:  # pragma: no cover - older triton
    TensorDescriptor = None
try:  # Gluon (triton >= 3.5) for the Hopper kernel; without it the Triton kernels run everywhere
    from triton.experimental import gluon
    from triton.experimental.gluon import language as gl
    from triton.experimental.gluon.language.nvidia.hopper import (
        fence_async_shared,
        mbarrier,
        tma,
        warpgroup_mma,
        warpgroup_mma_wait,
    )
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor as GluonTensorDescriptor

    # triton 3.6 names the TMA copy async_copy_global_to_shared; later versions async_load
    _tma_load = getattr(tma, "async_load", None) or tma.async_copy_global_to_shared
    # a barrier of the warps of one partition: thread_barrier in triton 3.6, barrier later
    _thread_barrier = getattr(gl, "thread_barrier", None) or gl.barrier
    # a shared-memory view as another shape: reinterpret after triton 3.6, _reinterpret in it
    _NEW_REINTERPRET = gl.constexpr(hasattr(gl.shared_memory_descriptor, "reinterpret"))
except ImportError:  # pragma: no cover - older triton
    gluon = None

TUNABLES = {
    # bf16/fp16, square-ish shapes
    "BLOCK_M": 128,
    "BLOCK_N": 256,
    "BLOCK_K": 64,
    "GROUP_M": 4,
    "num_warps": 8,
    "num_stages": 4,  # 0.1988 vs 0.2055 ms with 3 at 4096^3 (benchmarks/results/sweep-20261130T164547Z.json)
    "PERSISTENT_TMA": True,  # True: the persistent kernel fed by TMA descriptors (Hopper and later)
    "TMA_EPILOGUE": True,  # persistent kernel only: residual loaded and output stored by TMA descriptors
    "EPILOGUE_SUBTILE": 2,  # persistent kernel only: 2 = epilogue on two BLOCK_N/2 halves (fewer live registers)
    "FLATTEN": False,  # persistent kernel only: flatten tile and K loops so loads for the next tile prefetch
    "WARP_SPECIALIZE": False,  # persistent kernel only: compiler warp specialisation of the tile loop (GPU only)
    "PROGRAMS_PER_SM": 1,  # persistent kernel only: 2 = two programs per SM, one's epilogue overlapping the other's MMAs
    # EPILOGUE_16BIT: the epilogue's arithmetic on 16-bit outputs (not the row-sum path). "fp32": everything in
    # fp32, one rounding at the store. "lean": the bias as the accumulator's start value (one add less), the scale
    # folded into GELU's half (h = x * scale / 2, y = h + h tanh z: one multiply less), and the residual added to
    # the rounded output in packed 16-bit (add.rn.bf16x2 / f16x2: one op per two values, no unpacking), as
    # eager's own last add does. Why: the non-warp-specialised kernel issues the epilogue between two tiles'
    # MMAs; the tall bf16 kernel's SASS (triton 3.6) shrinks from 2152 to 1704 instructions, all of it epilogue.
    # 4096^3: "fp32" 0.1967-0.1973 ms against "lean" 0.2022-0.2033 (benchmarks/results/sweep-20261201T012240Z.json)
    "EPILOGUE_16BIT": "fp32",
    # bf16/fp16, tall and skinny (M >= 8 N, e.g. 32768 x 2048 -> 512): the same keys with a TALL_ prefix
    "TALL_BLOCK_M": 128,
    "TALL_BLOCK_N": 256,
    "TALL_BLOCK_K": 64,
    "TALL_GROUP_M": 8,
    "TALL_num_warps": 8,
    "TALL_num_stages": 4,  # 0.1209 vs 0.1245 ms with 3 (benchmarks/results/sweep-20261130T170231Z.json)
    "TALL_PERSISTENT_TMA": True,
    "TALL_TMA_EPILOGUE": True,
    "TALL_EPILOGUE_SUBTILE": 2,
    "TALL_FLATTEN": False,
    "TALL_WARP_SPECIALIZE": False,
    "TALL_PROGRAMS_PER_SM": 1,
    # "lean" 0.1167-0.1214 ms against "fp32" 0.1182-0.1214, interleaved (benchmarks/results/sweep-20261201T012240Z.json)
    "TALL_EPILOGUE_16BIT": "lean",
    # Hopper, 16-bit, tall, no row sum: the warp-specialised Gluon kernel (module docstring). 32768x2048 -> 512 bf16
    # through the harness: 0.1111 ms (IN_FLIGHT 0; 0.1129-0.1145 with 1) against the Triton kernel's 0.1153-0.1162
    # (benchmarks/results/library-h200-gemm-*.json); against cuBLAS F.linear alone 0.876-0.94x by window, the Triton
    # kernel 0.867-0.891x (gemm-hopper-timing-h200-2026120[12]T*.json). At 4096^3 it is not
    # faster (0.217-0.230 ms against 0.213-0.229, gluon-gemm-probe-h200-20261201T232221Z.json): square shapes keep
    # the Triton kernel
    "TALL_HOPPER_WS": True,
    "HOPPER_STAGES": 3,  # ring slots of a 128xBK x tile and a 256xBK W tile (48 KB each at BK 64: 4 do not fit
    # beside the 64 KB hand-off buffer; 6 of 24 KB at BK 32)
    "HOPPER_BK": 64,  # k-depth of a ring slot: 64 or 32
    # wgmmas an MMA warp group keeps in flight while it waits for the next slot: 0 (each slot freed as soon as its
    # wgmma is done, so the loader runs a slot further ahead) was faster than 1 in 24 of 34 alternating rounds in
    # four windows, by ~0.8% at the median (benchmarks/results/gemm-hopper-timing-h200-20261202T*.json)
    "HOPPER_IN_FLIGHT": 0,
    "HOPPER_GROUP_M": 1,  # tile order: 1 walks the column tiles of a row block in turn (W is 2 MB: it stays in L2)
    "HOPPER_CHUNK": 8,  # rows the epilogue warps take at a time (16: no faster, gluon-gemm-probe-h200-20261201T231628Z.json)
    # A program's last tile is the tail: nothing overlaps its epilogue, which the two epilogue warps ran in ~8.5 us
    # of the tall spec's ~112 (timed by leaving it out: gemm-hopper-timing-h200-s18a-20261202T055333Z.json).
    # HOPPER_ROLLED: the epilogue warps' chunk loop kept a loop (one body, hot in the instruction cache) over
    # CHUNK-row views of a row-major hand-off buffer, instead of unrolled over its NVMMA layout (6832 SASS
    # instructions a kernel against 2000; alone no faster). HOPPER_TAIL_ROWS (with ROLLED): rows of each MMA warp
    # group's 64 that the epilogue warps take in the last tile (0, 16, 32, 48 or 64); the group runs the rest
    # itself, a loop over 16-row views, its accumulator free by then. Code that runs once a program is cold in the
    # instruction cache (unrolled, the same split was 0.1165-0.1386 ms against 0.1116:
    # -s18b-20261202T060216Z.json); rolled, the groups' whole last tile (TAIL_ROWS 0) took the tall spec from 0.1129
    # to 0.1069 ms, as fast as leaving that epilogue out (0.1074), 16/32/48 rows 0.1090/0.1107/0.1129
    # (-s18c-20261202T061133Z.json; bits identical, GPU tests).
    "HOPPER_ROLLED": True,
    "HOPPER_TAIL_ROWS": 0,
    # Repeat calls of one problem (shapes, strides, dtypes, epilogue, pointer alignments) on the Hopper path launch
    # the kernel the first compiled straight through its launcher (see _HopperPlan)
    "HOPPER_LAUNCH_PLANS": True,
    # fp32 inputs, every shape: the same keys with an FP32_ prefix
    "FP32_BLOCK_M": 128,
    "FP32_BLOCK_N": 128,
    "FP32_BLOCK_K": 32,
    "FP32_GROUP_M": 8,
    "FP32_num_warps": 8,
    "FP32_num_stages": 3,
    "FP32_PERSISTENT_TMA": False,
    "FP32_TMA_EPILOGUE": False,
    "FP32_EPILOGUE_SUBTILE": 1,
    "FP32_FLATTEN": False,
    "FP32_WARP_SPECIALIZE": False,
    "FP32_PROGRAMS_PER_SM": 1,
    "FP32_EPILOGUE_16BIT": "fp32",  # fp32 outputs are always computed in fp32 (the key completes the FP32_ set)
    # "tf32x3" (default): each fp32 operand split into a TF32 high part and a TF32 remainder, three
    # tensor-core products (the remainder x remainder term dropped): relative error near fp32 FMA's
    # (benchmarks/gpu/gemm_precision.py measures it against fp64), 3.6x faster than "ieee" on the H200.
    # "ieee": plain fp32 FMA. Never plain "tf32" (one TF32 product keeps 10 of fp32's 23 mantissa bits).
    "FP32_PRECISION": "tf32x3",
    # Exact (erf) GELU on 16-bit outputs: "erf" (libdevice erff, ~32 instructions per element, which the
    # non-warp-specialised persistent kernel runs between two tiles' MMAs) or "tanh_form": the tanh
    # approximation written as x * sigmoid(2z) = x / (1 + 2^(-2z log2 e)) (~12 instructions: one ex2, one
    # approximate reciprocal; no 1 + tanh cancellation, so the error stays relative for large |x|). It
    # differs from erf GELU by at most 4.8e-4 absolute (at x ~ -2.7), a twentieth of the 16-bit
    # tolerance's atol of 1e-2 (test_gemm_epilogue.py bounds it); fp32 outputs always use erf.
    # "tanh_hw": the same tanh approximation as h + h tanh(z), h = x / 2, with the hardware's tanh.approx.f32
    # (one SFU op, relative error <= 2^-10.7: ~6 instructions); its error adds |x| 2^-11.7 absolute
    # (GPU only: the CPU interpreter runs "tanh_form"). Default: tall bf16 0.1174 ms against tanh_form's 0.1209,
    # 4096^3 0.1975 against 0.1988 (benchmarks/results/sweep-20261130T172234Z.json, -170231Z, -164547Z).
    "GELU_16BIT": "tanh_hw",
}

_ACTIVATIONS = ("none", "relu", "gelu", "gelu_tanh", "silu")


@triton.jit
def _tile_coords(tile, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr):
    # Grouped ordering: GROUP_M row-blocks in a row share each W column-block while it is in L2.
    n_blocks_m = tl.cdiv(M, BLOCK_M)
    n_blocks_n = tl.cdiv(N, BLOCK_N)
    blocks_per_group = GROUP_M * n_blocks_n
    first_m = (tile // blocks_per_group) * GROUP_M
    group_rows = min(n_blocks_m - first_m, GROUP_M)
    pid_m = first_m + (tile % blocks_per_group) % group_rows
    pid_n = (tile % blocks_per_group) // group_rows
    return pid_m, pid_n


@triton.jit
def _mma(a, b, acc, IS_FP32: tl.constexpr, FP32_PRECISION: tl.constexpr, UPCAST_DOT: tl.constexpr):
    if IS_FP32:  # fp32 inputs: "ieee" or "tf32x3", never a silent TF32 downgrade
        acc = tl.dot(a, b, acc, input_precision=FP32_PRECISION)
    elif UPCAST_DOT:  # CPU interpreter only: its bf16 dot multiplies raw bits, so go through fp32
        acc = tl.dot(a.to(tl.float32), b.to(tl.float32), acc, input_precision="ieee")
    else:
        acc = tl.dot(a, b, acc)
    return acc


@triton.jit
def _acc_start(b_ptr, off_n, N, BIAS_IN_ACC: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """The accumulator's start: zeros, or with BIAS_IN_ACC the bias row, so the MMAs add onto it and the
    epilogue has one add per value less."""
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    if BIAS_IN_ACC:
        cols = off_n + tl.arange(0, BLOCK_N)
        acc += tl.load(b_ptr + cols, mask=cols < N, other=0.0).to(tl.float32)[None, :]
    return acc


@triton.jit
def _add_16bit(a, b, PACKED_ADD: tl.constexpr):
    """a + b for 16-bit a, b, rounded once to their type: PACKED_ADD, the PTX add.rn.{bf16,f16}x2 (two values per
    instruction, GPU), or "" for the same through fp32 (the exact sum of two 16-bit values fits fp32's mantissa
    unless their exponents are far apart, where the smaller is under half an ulp of the larger either way)."""
    if PACKED_ADD == "":
        return (a.to(tl.float32) + b.to(tl.float32)).to(a.dtype)
    return tl.inline_asm_elementwise(PACKED_ADD + " $0, $1, $2;", "=r,r,r", [a, b], dtype=a.dtype, is_pure=True,
                                     pack=2)


@triton.jit
def _epilogue(acc, off_m, off_n, b_ptr, r_ptr, y_ptr, r_desc, y_desc, M, N, stride_rm, stride_rn, stride_ym,
              stride_yn, scale, HAS_BIAS: tl.constexpr, HAS_RESIDUAL: tl.constexpr, ACTIVATION: tl.constexpr,
              ROW_SUM: tl.constexpr, TMA_EPILOGUE: tl.constexpr, LEAN: tl.constexpr, PACKED_ADD: tl.constexpr,
              BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    # In fp32 registers: bias, activation, scale, residual; then one store of the (BLOCK_M, BLOCK_N) tile at
    # (off_m, off_n), or with ROW_SUM one fp32 partial sum per row added atomically into y (M,): the M x N
    # tile never leaves the SM. TMA_EPILOGUE: residual and output tiles move by TMA (edges zero-filled on
    # load, clipped on store) instead of masked pointer accesses.
    rows = off_m + tl.arange(0, BLOCK_M)
    cols = off_n + tl.arange(0, BLOCK_N)
    if HAS_BIAS:
        acc += tl.load(b_ptr + cols, mask=cols < N, other=0.0).to(tl.float32)[None, :]
    if ACTIVATION == "relu":
        acc = tl.maximum(acc, 0.0)
    elif ACTIVATION == "gelu":  # exact (erf) gelu, as nn.GELU() computes it
        acc = 0.5 * acc * (1.0 + tl.erf(acc * 0.7071067811865476))
    elif ACTIVATION == "gelu_tanh_form":  # "gelu" on 16-bit outputs with GELU_16BIT = "tanh_form"
        inner = 0.7978845608028654 * (acc + 0.044715 * acc * acc * acc)
        acc = acc / (1.0 + tl.math.exp2(inner * -2.8853900817779268))  # -2 log2(e): x * sigmoid(2 inner)
    elif ACTIVATION == "gelu_tanh_hw":  # "gelu" on 16-bit outputs with GELU_16BIT = "tanh_hw", on a GPU
        if LEAN:  # the scale rides on the half: no multiply after
            half = (0.5 * scale) * acc
        else:
            half = 0.5 * acc
        inner = acc * (0.7978845608028654 + 0.035677408136300125 * acc * acc)
        acc = half + half * tl.inline_asm_elementwise("tanh.approx.f32 $0, $1;", "=f,f", [inner], dtype=tl.float32,
                                                      is_pure=True, pack=1)
    elif ACTIVATION == "gelu_tanh":
        inner = 0.7978845608028654 * (acc + 0.044715 * acc * acc * acc)
        acc = 0.5 * acc * (1.0 + (2.0 * tl.sigmoid(2.0 * inner) - 1.0))
    elif ACTIVATION == "silu":
        acc = acc * tl.sigmoid(acc)
    if not (LEAN and ACTIVATION == "gelu_tanh_hw"):
        acc = acc * scale
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    if HAS_RESIDUAL:
        if TMA_EPILOGUE:
            r = r_desc.load([off_m, off_n])
        else:
            r = tl.load(r_ptr + rows[:, None] * stride_rm + cols[None, :] * stride_rn, mask=mask, other=0.0)
        if LEAN and not ROW_SUM:  # rounded first, then one 16-bit add (the residual is never widened)
            acc = _add_16bit(acc.to(y_ptr.dtype.element_ty), r, PACKED_ADD)
        else:
            acc += r.to(tl.float32)
    if ROW_SUM:
        tl.atomic_add(y_ptr + rows * stride_ym, tl.sum(tl.where(mask, acc, 0.0), 1), mask=rows < M)
    elif TMA_EPILOGUE:
        y_desc.store([off_m, off_n], acc.to(y_ptr.dtype.element_ty))
    else:
        y_ptrs = y_ptr + rows[:, None] * stride_ym + cols[None, :] * stride_yn
        tl.store(y_ptrs, acc.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _gemm_epilogue_kernel(
    x_ptr, w_ptr, b_ptr, r_ptr, y_ptr,
    M, N, K,
    stride_xm, stride_xk,
    stride_wn, stride_wk,
    stride_rm, stride_rn,
    stride_ym, stride_yn,
    scale,
    HAS_BIAS: tl.constexpr, HAS_RESIDUAL: tl.constexpr, ACTIVATION: tl.constexpr, ROW_SUM: tl.constexpr,
    EVEN_K: tl.constexpr, IS_FP32: tl.constexpr, FP32_PRECISION: tl.constexpr, UPCAST_DOT: tl.constexpr,
    LEAN: tl.constexpr, PACKED_ADD: tl.constexpr, BIAS_IN_ACC: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
):
    """One output tile per program; operands through pointers (any strides, any alignment)."""
    pid_m, pid_n = _tile_coords(tl.program_id(0), M, N, BLOCK_M, BLOCK_N, GROUP_M)
    # Rows/columns past the edge wrap around (loads stay in bounds without masks; stores are masked).
    rows = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    cols = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    ks = tl.arange(0, BLOCK_K)
    x_ptrs = x_ptr + rows[:, None] * stride_xm + ks[None, :] * stride_xk
    w_ptrs = w_ptr + ks[:, None] * stride_wk + cols[None, :] * stride_wn  # a (BLOCK_K, BLOCK_N) tile of W^T

    acc = _acc_start(b_ptr, pid_n * BLOCK_N, N, BIAS_IN_ACC, BLOCK_M, BLOCK_N)
    for k in range(tl.cdiv(K, BLOCK_K)):
        if EVEN_K:
            a = tl.load(x_ptrs)
            b = tl.load(w_ptrs)
        else:
            k_left = K - k * BLOCK_K
            a = tl.load(x_ptrs, mask=ks[None, :] < k_left, other=0.0)
            b = tl.load(w_ptrs, mask=ks[:, None] < k_left, other=0.0)
        acc = _mma(a, b, acc, IS_FP32, FP32_PRECISION, UPCAST_DOT)
        x_ptrs += BLOCK_K * stride_xk
        w_ptrs += BLOCK_K * stride_wk
    _epilogue(acc, pid_m * BLOCK_M, pid_n * BLOCK_N, b_ptr, r_ptr, y_ptr, r_ptr, y_ptr, M, N, stride_rm,
              stride_rn, stride_ym, stride_yn, scale, HAS_BIAS, HAS_RESIDUAL, ACTIVATION, ROW_SUM, False,
              LEAN, PACKED_ADD, BLOCK_M, BLOCK_N)


@triton.jit
def _gemm_epilogue_tma_kernel(
    x_desc, w_desc, r_desc, y_desc, b_ptr, r_ptr, y_ptr,
    M, N, K,
    stride_rm, stride_rn,
    stride_ym, stride_yn,
    scale,
    HAS_BIAS: tl.constexpr, HAS_RESIDUAL: tl.constexpr, ACTIVATION: tl.constexpr, ROW_SUM: tl.constexpr,
    IS_FP32: tl.constexpr, FP32_PRECISION: tl.constexpr, UPCAST_DOT: tl.constexpr, NUM_PROGRAMS: tl.constexpr,
    TMA_EPILOGUE: tl.constexpr, EPILOGUE_SUBTILE: tl.constexpr, FLATTEN: tl.constexpr,
    WARP_SPECIALIZE: tl.constexpr, LEAN: tl.constexpr, PACKED_ADD: tl.constexpr, BIAS_IN_ACC: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
):
    """Persistent: one program per SM walks the tiles; x and W tiles come by TMA (edges zero-filled).

    FLATTEN lets the pipeliner issue the next tile's first loads during this tile's epilogue;
    WARP_SPECIALIZE asks the compiler to split loads, MMAs and the epilogue into warp groups (the loop
    form of Triton's persistent-matmul tutorial); EPILOGUE_SUBTILE=2 runs the epilogue on two
    (BLOCK_M, BLOCK_N/2) halves so fewer fp32 values are live at once.
    """
    n_tiles = tl.cdiv(M, BLOCK_M) * tl.cdiv(N, BLOCK_N)
    k_steps = tl.cdiv(K, BLOCK_K)
    for tile in tl.range(tl.program_id(0), n_tiles, NUM_PROGRAMS, flatten=FLATTEN,
                         warp_specialize=WARP_SPECIALIZE):
        pid_m, pid_n = _tile_coords(tile, M, N, BLOCK_M, BLOCK_N, GROUP_M)
        off_m = pid_m * BLOCK_M
        off_n = pid_n * BLOCK_N
        acc = _acc_start(b_ptr, off_n, N, BIAS_IN_ACC, BLOCK_M, BLOCK_N)
        for k in range(k_steps):
            a = x_desc.load([off_m, k * BLOCK_K])
            b = w_desc.load([off_n, k * BLOCK_K])  # a (BLOCK_N, BLOCK_K) tile of W
            acc = _mma(a, b.T, acc, IS_FP32, FP32_PRECISION, UPCAST_DOT)
        if EPILOGUE_SUBTILE == 2:
            halves = tl.permute(tl.reshape(acc, (BLOCK_M, 2, BLOCK_N // 2)), (0, 2, 1))
            acc0, acc1 = tl.split(halves)
            _epilogue(acc0, off_m, off_n, b_ptr, r_ptr, y_ptr, r_desc, y_desc, M, N, stride_rm, stride_rn,
                      stride_ym, stride_yn, scale, HAS_BIAS, HAS_RESIDUAL, ACTIVATION, ROW_SUM, TMA_EPILOGUE,
                      LEAN, PACKED_ADD, BLOCK_M, BLOCK_N // 2)
            _epilogue(acc1, off_m, off_n + BLOCK_N // 2, b_ptr, r_ptr, y_ptr, r_desc, y_desc, M, N, stride_rm,
                      stride_rn, stride_ym, stride_yn, scale, HAS_BIAS, HAS_RESIDUAL, ACTIVATION, ROW_SUM,
                      TMA_EPILOGUE, LEAN, PACKED_ADD, BLOCK_M, BLOCK_N // 2)
        else:
            _epilogue(acc, off_m, off_n, b_ptr, r_ptr, y_ptr, r_desc, y_desc, M, N, stride_rm, stride_rn,
                      stride_ym, stride_yn, scale, HAS_BIAS, HAS_RESIDUAL, ACTIVATION, ROW_SUM, TMA_EPILOGUE,
                      LEAN, PACKED_ADD, BLOCK_M, BLOCK_N)


if gluon is not None:

    @gluon.jit
    def _hopper_tile(tile, n_blocks_m, N_BLOCKS_N: gl.constexpr, GROUP_M: gl.constexpr):
        # the grouped order of _tile_coords
        per_group = GROUP_M * N_BLOCKS_N
        first_m = (tile // per_group) * GROUP_M
        rows = gl.minimum(n_blocks_m - first_m, GROUP_M)
        return first_m + (tile % per_group) % rows, (tile % per_group) // rows

    @gluon.jit
    def _hopper_loader(x_desc, w_desc, x_ring, w_ring, ready, empty, n_tiles, n_blocks_m, K_STEPS: gl.constexpr,
                       N_BLOCKS_N: gl.constexpr, STAGES: gl.constexpr, GROUP_M: gl.constexpr):
        # One warp: the TMA loads of every k-step of this program's tiles, up to STAGES ahead of the MMAs.
        BM: gl.constexpr = x_desc.block_type.shape[0]
        BK: gl.constexpr = x_desc.block_type.shape[1]
        BN: gl.constexpr = w_desc.block_type.shape[0]
        step = 0
        for tile in range(gl.program_id(0), n_tiles, gl.num_programs(0)):
            pm, pn = _hopper_tile(tile, n_blocks_m, N_BLOCKS_N, GROUP_M)
            for k in range(K_STEPS):
                s = step % STAGES
                # the slot is free once both MMA warp groups released its last use (the first round passes at once)
                mbarrier.wait(empty.index(s), ((step // STAGES) & 1) ^ 1)
                mbarrier.expect(ready.index(s), x_desc.block_type.nbytes + w_desc.block_type.nbytes)
                _tma_load(x_desc, [pm * BM, k * BK], ready.index(s), x_ring.index(s))
                _tma_load(w_desc, [pn * BN, k * BK], ready.index(s), w_ring.index(s))
                step += 1

    @gluon.jit
    def _hopper_k_steps(x_ring, w_ring, ready, empty, acc, step, WG: gl.constexpr, HALF: gl.constexpr,
                        K_STEPS: gl.constexpr, STAGES: gl.constexpr, IN_FLIGHT: gl.constexpr = 1):
        """One MMA warp group's wgmmas for a tile (its HALF rows of each x slot); each slot goes back to the loader
        once the wgmma reading it is done. IN_FLIGHT 1 keeps one wgmma in flight while the group waits for the
        next slot (the group then holds two slots); 0 waits for each at once and frees its slot, so the loader
        runs one slot further ahead (the other MMA warp group keeps the tensor cores busy meanwhile).
        (acc, the next ring step)."""
        for k in range(K_STEPS):
            s = step % STAGES
            mbarrier.wait(ready.index(s), (step // STAGES) & 1)
            acc = warpgroup_mma(x_ring.index(s).slice(WG * HALF, HALF), w_ring.index(s).permute((1, 0)), acc,
                                is_async=True)
            if IN_FLIGHT == 0:
                acc = warpgroup_mma_wait(0, deps=(acc,))
                mbarrier.arrive(empty.index(s))
            else:
                acc = warpgroup_mma_wait(1, deps=(acc,))
                if k > 0:  # the wgmma before this one is done: its slot goes back to the loader
                    mbarrier.arrive(empty.index((step - 1) % STAGES))
            step += 1
        if IN_FLIGHT != 0:
            acc = warpgroup_mma_wait(0, deps=(acc,))
            mbarrier.arrive(empty.index((step - 1) % STAGES))
        return acc, step

    @gluon.jit
    def _hopper_mma(x_ring, w_ring, ready, empty, hbuf, hfull, hfree, b_ptr, r_ptr, y_ptr, M, N, stride_rm,
                    stride_ym, scale, n_tiles, n_blocks_m, WG: gl.constexpr, K_STEPS: gl.constexpr,
                    N_BLOCKS_N: gl.constexpr, STAGES: gl.constexpr, GROUP_M: gl.constexpr, HAS_BIAS: gl.constexpr,
                    HAS_RESIDUAL: gl.constexpr, ACTIVATION: gl.constexpr, IN_FLIGHT: gl.constexpr = 1,
                    TAIL_ROWS: gl.constexpr = 64):
        # One MMA warp group: rows [64 WG, 64 WG + 64) of each tile; x W^T + b, rounded to 16 bits, goes to the
        # epilogue warps through hbuf, and the group starts its next tile. In the program's last tile the group
        # runs the epilogue of its rows past the first TAIL_ROWS itself.
        BM: gl.constexpr = hbuf.shape[0]
        BN: gl.constexpr = hbuf.shape[1]
        HALF: gl.constexpr = BM // 2
        acc_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1],
                                                             instr_shape=[16, BN, 16])
        cols0 = gl.arange(0, BN, layout=gl.SliceLayout(0, acc_layout))
        mine = hbuf.slice(WG * HALF, HALF)
        step = 0
        n_done = 0
        for tile in range(gl.program_id(0), n_tiles, gl.num_programs(0)):
            pm, pn = _hopper_tile(tile, n_blocks_m, N_BLOCKS_N, GROUP_M)
            acc = gl.zeros([HALF, BN], gl.float32, acc_layout)
            if HAS_BIAS:
                cols = pn * BN + cols0
                acc += gl.expand_dims(gl.load(b_ptr + cols, mask=cols < N, other=0.0).to(gl.float32), 0)
            acc, step = _hopper_k_steps(x_ring, w_ring, ready, empty, acc, step, WG, HALF, K_STEPS, STAGES,
                                        IN_FLIGHT)
            mbarrier.wait(hfree.index(WG), (n_done & 1) ^ 1)  # the epilogue warps have read this group's last rows
            mine.store(acc.to(hbuf.dtype))
            mbarrier.arrive(hfull)
            if TAIL_ROWS < HALF:  # noqa: SIM102  (a compile-time, then a run-time condition)
                if tile + gl.num_programs(0) >= n_tiles:  # the program's last tile
                    _thread_barrier()  # the whole group's rows are in before any thread reads them back
                    _hopper_tail_rows(hbuf, r_ptr, y_ptr, pm, pn, M, N, stride_rm, stride_ym, scale,
                                      WG * HALF + TAIL_ROWS, (WG + 1) * HALF, HAS_RESIDUAL, ACTIVATION)
            n_done += 1  # noqa: SIM113  (Gluon loops take no enumerate)

    @gluon.jit
    def _hopper_tail_rows(hbuf, r_ptr, y_ptr, pm, pn, M, N, stride_rm, stride_ym, scale, FIRST: gl.constexpr,
                          END: gl.constexpr, HAS_RESIDUAL: gl.constexpr, ACTIVATION: gl.constexpr):
        """The epilogue of rows [FIRST, END) of tile (pm, pn) from the row-major hand-off buffer, by this partition's
        warps: a loop over 16-row views (one body: code that runs once a program is cold in the instruction cache,
        and unrolled it ran slower than the epilogue warps alone), each view's residual loaded a view ahead."""
        BM: gl.constexpr = hbuf.shape[0]
        BN: gl.constexpr = hbuf.shape[1]
        SLICE: gl.constexpr = 16
        views = _hopper_row_views(hbuf, SLICE)
        layout: gl.constexpr = gl.BlockedLayout([1, 8], [1, 32], [gl.num_warps(), 1], [1, 0])
        rows0 = gl.arange(0, SLICE, layout=gl.SliceLayout(1, layout))
        cols = pn * BN + gl.arange(0, BN, layout=gl.SliceLayout(0, layout))
        r_next = _hopper_residual(r_ptr, pm, pn, FIRST // SLICE, HAS_RESIDUAL, M, N, stride_rm, BM, BN, SLICE, layout)
        for v in range(FIRST // SLICE, END // SLICE):
            r = r_next
            if v + 1 < END // SLICE:
                r_next = _hopper_residual(r_ptr, pm, pn, v + 1, HAS_RESIDUAL, M, N, stride_rm, BM, BN, SLICE, layout)
            rows = pm * BM + v * SLICE + rows0
            _hopper_rows_out(views.index(v).load(layout), r, y_ptr, rows, cols, M, N, stride_ym, scale, HAS_RESIDUAL,
                             ACTIVATION)

    @gluon.jit
    def _hopper_row_views(hbuf, ROWS: gl.constexpr):
        """The row-major hand-off buffer as [BM // ROWS, ROWS, BN]: ROWS-row views indexed at run time."""
        shape: gl.constexpr = [hbuf.shape[0] // ROWS, ROWS, hbuf.shape[1]]
        if _NEW_REINTERPRET:  # (an if/else: the frontend would compile a return after an early one too)
            views = hbuf.reinterpret(hbuf.dtype, shape, hbuf.layout)
        else:
            views = hbuf._reinterpret(hbuf.dtype, shape, hbuf.layout)
        return views

    @gluon.jit
    def _hopper_rows_out(h, r, y_ptr, rows, cols, M, N, stride_ym, scale, HAS_RESIDUAL: gl.constexpr,
                         ACTIVATION: gl.constexpr):
        """act(h) * scale, rounded, + residual, rounded, stored at rows x cols of the output (h: x W^T + b in 16
        bits, as the hand-off buffer holds it)."""
        out = _hopper_activate(h.to(gl.float32), scale, ACTIVATION).to(h.dtype)
        if HAS_RESIDUAL:  # (ptxas makes this one packed add, HADD2.BF16, a pair of outputs)
            out = (out.to(gl.float32) + r.to(gl.float32)).to(h.dtype)
        mask = gl.expand_dims(rows < M, 1) & gl.expand_dims(cols < N, 0)
        gl.store(y_ptr + gl.expand_dims(rows * stride_ym, 1) + gl.expand_dims(cols, 0), out, mask=mask)

    @gluon.jit
    def _hopper_activate(v, scale, ACTIVATION: gl.constexpr):
        """act(v) * scale in fp32 (the activations of _epilogue; "gelu" is one of its 16-bit forms by then)."""
        if ACTIVATION == "gelu_tanh_hw":  # tanh GELU through tanh.approx, the scale riding on the half
            half = (0.5 * scale) * v
            inner = v * (0.7978845608028654 + 0.035677408136300125 * v * v)
            return half + half * gl.inline_asm_elementwise("tanh.approx.f32 $0, $1;", "=f,f", [inner],
                                                           dtype=gl.float32, is_pure=True, pack=1)
        elif ACTIVATION == "gelu":  # exact (erf)
            return (0.5 * scale) * v * (1.0 + gl.erf(v * 0.7071067811865476))
        elif ACTIVATION == "gelu_tanh_form" or ACTIVATION == "gelu_tanh":  # x * sigmoid(2 inner)
            inner = 0.7978845608028654 * (v + 0.044715 * v * v * v)
            return scale * v / (1.0 + gl.exp2(inner * -2.8853900817779268))
        elif ACTIVATION == "relu":
            return gl.maximum(v, 0.0) * scale
        elif ACTIVATION == "silu":
            return scale * v / (1.0 + gl.exp2(v * -1.4426950408889634))
        else:
            return v * scale

    @gluon.jit
    def _hopper_residual(r_ptr, pm, pn, c, live, M, N, stride_rm, BM: gl.constexpr, BN: gl.constexpr,
                         CHUNK: gl.constexpr, layout: gl.constexpr):
        """The residual's rows [CHUNK c, CHUNK c + CHUNK) of tile (pm, pn); zeros where not live (past the last tile)."""
        rows = pm * BM + c * CHUNK + gl.arange(0, CHUNK, layout=gl.SliceLayout(1, layout))
        cols = pn * BN + gl.arange(0, BN, layout=gl.SliceLayout(0, layout))
        mask = gl.expand_dims((rows < M) & live, 1) & gl.expand_dims(cols < N, 0)
        return gl.load(r_ptr + gl.expand_dims(rows * stride_rm, 1) + gl.expand_dims(cols, 0), mask=mask, other=0.0)

    @gluon.jit
    def _hopper_epilogue(hbuf, hfull, hfree, r_ptr, y_ptr, M, N, stride_rm, stride_ym, scale, n_tiles, n_blocks_m,
                         N_BLOCKS_N: gl.constexpr, GROUP_M: gl.constexpr, CHUNK: gl.constexpr,
                         HAS_RESIDUAL: gl.constexpr, ACTIVATION: gl.constexpr, ROLLED: gl.constexpr = False,
                         TAIL_ROWS: gl.constexpr = 64):
        # The epilogue warps: act(h) * scale, rounded, + residual, rounded, in CHUNK-row slices with 16-byte loads
        # and stores. Each slice's residual is loaded a slice ahead (the next tile's first before this tile's h is
        # in); each MMA warp group gets its half of hbuf back as soon as it has been read. ROLLED: one loop body for
        # every tile; in the program's last tile it takes only the first TAIL_ROWS rows of each group's half (the
        # groups run the rest).
        BM: gl.constexpr = hbuf.shape[0]
        BN: gl.constexpr = hbuf.shape[1]
        N_CHUNKS: gl.constexpr = BM // CHUNK
        HALF_CHUNKS: gl.constexpr = N_CHUNKS // 2
        TAIL_CHUNKS: gl.constexpr = TAIL_ROWS // CHUNK  # of each half, in the last tile
        layout: gl.constexpr = gl.BlockedLayout([1, 8], [1, 32], [gl.num_warps(), 1], [1, 0])
        rows0 = gl.arange(0, CHUNK, layout=gl.SliceLayout(1, layout))
        cols0 = gl.arange(0, BN, layout=gl.SliceLayout(0, layout))
        n_done = 0
        pm, pn = _hopper_tile(gl.program_id(0), n_blocks_m, N_BLOCKS_N, GROUP_M)
        r_next = _hopper_residual(r_ptr, pm, pn, 0, (gl.program_id(0) < n_tiles) & HAS_RESIDUAL, M, N, stride_rm,
                                  BM, BN, CHUNK, layout)
        for tile in range(gl.program_id(0), n_tiles, gl.num_programs(0)):
            pm, pn = _hopper_tile(tile, n_blocks_m, N_BLOCKS_N, GROUP_M)
            next_tile = tile + gl.num_programs(0)
            npm, npn = _hopper_tile(next_tile, n_blocks_m, N_BLOCKS_N, GROUP_M)
            cols = pn * BN + cols0
            mbarrier.wait(hfull, n_done & 1)
            if ROLLED:  # one body, c a run-time index
                chunks = _hopper_row_views(hbuf, CHUNK)
                per_half = HALF_CHUNKS  # chunks of each group's half taken here
                if TAIL_ROWS < BM // 2:  # noqa: SIM102  (a compile-time, then a run-time condition)
                    if next_tile >= n_tiles:
                        per_half = TAIL_CHUNKS
                for j in range(2 * per_half):  # chunks [0, per_half) of each half, in order
                    c = (j // per_half) * HALF_CHUNKS + j % per_half
                    rows = pm * BM + c * CHUNK + rows0
                    r = r_next
                    if j + 1 < 2 * per_half:
                        c_next = ((j + 1) // per_half) * HALF_CHUNKS + (j + 1) % per_half
                        r_next = _hopper_residual(r_ptr, pm, pn, c_next, HAS_RESIDUAL, M, N, stride_rm, BM, BN, CHUNK,
                                                  layout)
                    else:
                        r_next = _hopper_residual(r_ptr, npm, npn, 0, (next_tile < n_tiles) & HAS_RESIDUAL, M, N,
                                                  stride_rm, BM, BN, CHUNK, layout)
                    _hopper_rows_out(chunks.index(c).load(layout), r, y_ptr, rows, cols, M, N, stride_ym, scale,
                                     HAS_RESIDUAL, ACTIVATION)
                    if j == per_half - 1:  # the first MMA warp group's rows here are read
                        mbarrier.arrive(hfree.index(0))  # (TAIL_ROWS 0: not in the last tile, where none waits)
            else:
                for c in gl.static_range(N_CHUNKS):
                    rows = pm * BM + c * CHUNK + rows0
                    r = r_next
                    if c + 1 < N_CHUNKS:
                        r_next = _hopper_residual(r_ptr, pm, pn, c + 1, HAS_RESIDUAL, M, N, stride_rm, BM, BN, CHUNK,
                                                  layout)
                    else:
                        r_next = _hopper_residual(r_ptr, npm, npn, 0, (next_tile < n_tiles) & HAS_RESIDUAL, M, N,
                                                  stride_rm, BM, BN, CHUNK, layout)
                    h = hbuf.slice(c * CHUNK, CHUNK).load(layout)
                    if c == N_CHUNKS // 2 - 1:  # the first MMA warp group's rows are read
                        mbarrier.arrive(hfree.index(0))
                    _hopper_rows_out(h, r, y_ptr, rows, cols, M, N, stride_ym, scale, HAS_RESIDUAL, ACTIVATION)
            mbarrier.arrive(hfree.index(1))
            n_done += 1  # noqa: SIM113  (Gluon loops take no enumerate)

    @gluon.jit
    def _gemm_epilogue_hopper_kernel(x_desc, w_desc, b_ptr, r_ptr, y_ptr, M, N, stride_rm, stride_ym, scale, n_tiles,
                                     n_blocks_m, K_STEPS: gl.constexpr, N_BLOCKS_N: gl.constexpr,
                                     STAGES: gl.constexpr, GROUP_M: gl.constexpr, CHUNK: gl.constexpr,
                                     HAS_BIAS: gl.constexpr, HAS_RESIDUAL: gl.constexpr, ACTIVATION: gl.constexpr,
                                     IN_FLIGHT: gl.constexpr, ROLLED: gl.constexpr = False,
                                     TAIL_ROWS: gl.constexpr = 64):
        """Persistent, warp-specialised: two MMA warp groups (the default partition and a worker), two epilogue
        warps and a loader warp; a program's last tile, which nothing overlaps, the MMA warp groups finish
        themselves (all but TAIL_ROWS of their rows). 168 registers for the MMA groups (a 64x256 fp32 accumulator is
        128), 152 for the third warp group, which the epilogue and loader warps share (setmaxnreg is per warp group): 3 x 128 threads
        x 168 fill the 64K registers. 16 warps would cap every thread at 128."""
        BM: gl.constexpr = x_desc.block_type.shape[0]
        BN: gl.constexpr = w_desc.block_type.shape[0]
        dtype: gl.constexpr = x_desc.dtype
        x_ring = gl.allocate_shared_memory(dtype, [STAGES] + x_desc.block_type.shape, x_desc.layout)
        w_ring = gl.allocate_shared_memory(dtype, [STAGES] + w_desc.block_type.shape, w_desc.layout)
        if ROLLED:  # row-major, 16-byte vectors XOR-swizzled by row % 8: row views of it are the same bytes
            hbuf = gl.allocate_shared_memory(dtype, [BM, BN], gl.SwizzledSharedLayout(8, 1, 8, order=[1, 0]))
        else:
            hbuf = gl.allocate_shared_memory(dtype, [BM, BN], gl.NVMMASharedLayout.get_default_for([BM, BN], dtype))
        ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
        empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
        hfull = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
        hfree = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())  # one an MMA warp group
        for i in gl.static_range(STAGES):
            mbarrier.init(ready.index(i), count=1)
            mbarrier.init(empty.index(i), count=2)  # one arrival from each MMA warp group
        mbarrier.init(hfull, count=2)  # both MMA warp groups have written their rows
        for i in gl.static_range(2):
            mbarrier.init(hfree.index(i), count=1)
        fence_async_shared()
        gl.warp_specialize([
            (_hopper_mma, (x_ring, w_ring, ready, empty, hbuf, hfull, hfree, b_ptr, r_ptr, y_ptr, M, N, stride_rm,
                           stride_ym, scale, n_tiles, n_blocks_m, 0, K_STEPS, N_BLOCKS_N, STAGES, GROUP_M, HAS_BIAS,
                           HAS_RESIDUAL, ACTIVATION, IN_FLIGHT, TAIL_ROWS)),
            (_hopper_mma, (x_ring, w_ring, ready, empty, hbuf, hfull, hfree, b_ptr, r_ptr, y_ptr, M, N, stride_rm,
                           stride_ym, scale, n_tiles, n_blocks_m, 1, K_STEPS, N_BLOCKS_N, STAGES, GROUP_M, HAS_BIAS,
                           HAS_RESIDUAL, ACTIVATION, IN_FLIGHT, TAIL_ROWS)),
            (_hopper_epilogue, (hbuf, hfull, hfree, r_ptr, y_ptr, M, N, stride_rm, stride_ym, scale, n_tiles,
                                n_blocks_m, N_BLOCKS_N, GROUP_M, CHUNK, HAS_RESIDUAL, ACTIVATION, ROLLED, TAIL_ROWS)),
            (_hopper_loader, (x_desc, w_desc, x_ring, w_ring, ready, empty, n_tiles, n_blocks_m, K_STEPS, N_BLOCKS_N,
                              STAGES, GROUP_M)),
        ], [4, 2, 1], [168, 152, 152])


# Host-side caches: a launch's Python work is of the order of the tall GEMM's 0.11 ms on the GPU (0.10-0.12 ms
# a call measured on the H200 box, benchmarks/results/gemm-hopper-timing-h200-20261201T234624Z.json), and where it
# is not hidden behind queued GPU work the GPU waits for it.
_LAYOUTS: dict = {}
_CAPABILITY: dict = {}


def _cdiv(a: int, b: int) -> int:
    """ceil(a / b) on the host (triton 3.6's triton.cdiv is wrapped as a constexpr function: a few calls more)."""
    return -(-a // b)


def _smem_layout(rows: int, cols: int, dtype: torch.dtype):
    """The NVMMA shared-memory layout of a (rows, cols) 16-bit TMA box, made once."""
    key = (rows, cols, dtype)
    if key not in _LAYOUTS:
        elem = gl.bfloat16 if dtype == torch.bfloat16 else gl.float16
        _LAYOUTS[key] = gl.NVMMASharedLayout.get_default_for([rows, cols], elem)
    return _LAYOUTS[key]


def _capability(device: torch.device) -> tuple[int, int]:
    if device not in _CAPABILITY:
        _CAPABILITY[device] = torch.cuda.get_device_capability(device)
    return _CAPABILITY[device]


def _hopper_ok(x2: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, r2: torch.Tensor | None,
               row_sum: bool) -> bool:
    """Whether the Hopper kernel serves this call: TALL_HOPPER_WS on, Gluon present, an sm_90 GPU, 16-bit, no row
    sum, x and W fit for TMA, bias and residual rows with unit stride."""
    return (bool(TUNABLES["TALL_HOPPER_WS"]) and gluon is not None and x2.is_cuda and not row_sum
            and x2.dtype in (torch.bfloat16, torch.float16)
            and _capability(x2.device) == (9, 0) and _tma_ok(x2, weight)
            and (r2 is None or r2.stride(1) == 1) and (bias is None or bias.stride(0) == 1)
            and _int32_offsets(x2.shape[0], weight.shape[0], r2.stride(0) if r2 is not None else 0))


def _int32_offsets(m: int, n: int, residual_row_stride: int) -> bool:
    """Whether the Hopper kernel's epilogue offsets (row * row stride + column, in int32) stay below 2^31 for the
    (m, n) output and the residual."""
    return m * max(n, residual_row_stride) < 2**31


_HOPPER_TILE = (128, 256)  # BM, BN of the Hopper kernel (two 64x256 wgmma accumulators a tile)
_HOPPER_SMEM_BYTES = 227 * 1024  # the most shared memory one block may use on sm_90
_HOPPER_KNOBS = ("HOPPER_STAGES", "HOPPER_BK", "HOPPER_IN_FLIGHT", "HOPPER_GROUP_M", "HOPPER_CHUNK", "HOPPER_ROLLED",
                 "HOPPER_TAIL_ROWS")
# what a call's path and the Hopper kernel's compilation depend on besides the arguments
_PLAN_TUNABLES = ("TALL_HOPPER_WS", "GELU_16BIT", *_HOPPER_KNOBS)
_PLANS: dict = {}  # _HopperPlan by _call_key
_MAX_PLANS = 256


def _hopper_launch(x2: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, r2: torch.Tensor | None,
                   y: torch.Tensor, scale: float, activation: str) -> tuple:
    """Run the Hopper kernel into y (M, N), contiguous, through the JIT. Returns (the compiled kernel, its grid,
    the arguments fixed by the problem: tile counts and constexprs, by parameter name)."""
    M, K = x2.shape
    N = weight.shape[0]
    BM, BN = _HOPPER_TILE
    stages, bk, in_flight, group_m, chunk, rolled, tail_rows = (TUNABLES[name] for name in _HOPPER_KNOBS)
    ring_bytes = stages * (BM + BN) * bk * x2.element_size()
    if tail_rows not in (0, 16, 32, 48, 64) or tail_rows % chunk or (tail_rows < 64 and not rolled):
        raise ValueError(f"gemm_epilogue: TUNABLES HOPPER_TAIL_ROWS={tail_rows!r}: must be 0, 16, 32, 48 or 64, a "
                         f"multiple of HOPPER_CHUNK={chunk}, and under 64 only with HOPPER_ROLLED (now {rolled!r})")
    if (bk not in (32, 64) or in_flight not in (0, 1) or chunk not in (8, 16) or stages < 2
            or ring_bytes + BM * BN * x2.element_size() > _HOPPER_SMEM_BYTES - 1024):
        raise ValueError(f"gemm_epilogue: TUNABLES HOPPER_STAGES={stages}, HOPPER_BK={bk}, HOPPER_IN_FLIGHT="
                         f"{in_flight}, HOPPER_CHUNK={chunk}: BK must be 32 or 64, IN_FLIGHT 0 or 1, CHUNK 8 or 16, "
                         "and 2 or more ring slots must fit in shared memory beside the 64 KB hand-off buffer")
    x_desc = GluonTensorDescriptor.from_tensor(x2, [BM, bk], _smem_layout(BM, bk, x2.dtype))
    w_desc = GluonTensorDescriptor.from_tensor(weight, [BN, bk], _smem_layout(BN, bk, x2.dtype))
    n_bm, n_bn = _cdiv(M, BM), _cdiv(N, BN)
    n_tiles = n_bm * n_bn
    grid = min(_num_sms(x2.device), n_tiles)
    r = r2 if r2 is not None else y  # never read without a residual
    constexprs = {"K_STEPS": _cdiv(K, bk), "N_BLOCKS_N": n_bn, "STAGES": stages, "GROUP_M": group_m,
                  "CHUNK": chunk, "HAS_BIAS": bias is not None, "HAS_RESIDUAL": r2 is not None,
                  "ACTIVATION": activation, "IN_FLIGHT": in_flight, "ROLLED": bool(rolled), "TAIL_ROWS": tail_rows}
    kernel = _gemm_epilogue_hopper_kernel[(grid,)](
        x_desc, w_desc, bias if bias is not None else y, r, y, M, N, r.stride(0), y.stride(0), float(scale), n_tiles,
        n_bm, **constexprs, num_warps=4)
    return kernel, grid, {"n_tiles": n_tiles, "n_blocks_m": n_bm, **constexprs}


# Launch plans. A launch through the JIT costs ~0.1 ms of host Python (binding 21 arguments, specialising 12,
# validating two descriptors, choosing the path), as long as the kernel's 0.11 ms on the GPU: where no GPU work is
# queued ahead the GPU waits for it (benchmarks/results/gemm-hopper-timing-h200-20261201T234624Z.json). A repeat
# call of one problem takes the plan the first call left: the kernel it compiled, relaunched through its launcher
# (27.7 us of host time a call against 104.8, benchmarks/results/gemm-hopper-timing-h200-20261202T014111Z.json).


def _call_key(x, weight, bias, residual, activation: str, reduce: str) -> tuple:
    """Everything a call's path and the JIT's specialisation of the Hopper kernel depend on: shapes and strides
    (its integer arguments, the reshapes), dtypes, devices, the pointers' 16-byte alignment (outputs come from
    the caching allocator, always aligned), the epilogue and the TUNABLES that pick or compile the path."""
    return (activation, reduce, x.shape, x.stride(), x.dtype, x.device, x.data_ptr() % 16 == 0,
            weight.shape, weight.stride(), weight.dtype, weight.device, weight.data_ptr() % 16 == 0,
            None if bias is None else (bias.shape, bias.stride(), bias.dtype, bias.device, bias.data_ptr() % 16 == 0),
            None if residual is None else (residual.shape, residual.stride(), residual.dtype, residual.device,
                                           residual.data_ptr() % 16 == 0),
            tuple(TUNABLES[name] for name in _PLAN_TUNABLES))


class _HostBox:
    """What triton's CUDA launcher reads of a host-side TMA descriptor (base, shape, strides, padding): a
    relaunch makes one of these instead of a validated TensorDescriptor (the first launch validated them)."""

    __slots__ = ("base", "padding", "shape", "strides")

    def __init__(self, base: torch.Tensor):
        self.base, self.shape, self.strides, self.padding = base, base.shape, base.stride(), "zero"


class _HopperPlan:
    """A compiled Hopper kernel and the fixed part of its launch, for calls with one _call_key."""

    def __init__(self, kernel, grid: int, fixed: dict, x2: torch.Tensor, r: torch.Tensor, y: torch.Tensor,
                 out_shape: tuple):
        names = _gemm_epilogue_hopper_kernel.arg_names
        runtime = ["x_desc", "w_desc", "b_ptr", "r_ptr", "y_ptr", "M", "N", "stride_rm", "stride_ym", "scale"]
        if names[:len(runtime)] != runtime:
            raise RuntimeError(f"gemm_epilogue: the Hopper kernel's arguments changed: {names}")
        self.kernel, self.grid, self.out_shape = kernel, grid, out_shape
        # the JIT loads and launches a kernel on the current device (its function handle is that device's)
        self.device = triton.runtime.driver.active.get_current_device()
        (self.m, self.k), self.n = x2.shape, y.shape[1]
        self.strides = (r.stride(0), y.stride(0))
        # the launcher takes every parameter in order, constexprs included (it passes over those)
        self.tail = tuple(fixed[name] for name in names[len(runtime):])

    def __call__(self, x, weight, bias, residual, scale: float) -> torch.Tensor | None:
        """The call's output, or None where the current device is not the plan's (the JIT path then runs)."""
        driver = triton.runtime.driver.active
        if driver.get_current_device() != self.device:
            return None
        x2 = x.reshape(self.m, self.k)
        y = torch.empty((self.m, self.n), device=x.device, dtype=x.dtype)
        r = residual.reshape(self.m, self.n) if residual is not None else y
        k = self.kernel
        k.run(self.grid, 1, 1, driver.get_current_stream(self.device), k.function, k.packed_metadata, None, None,
              None, _HostBox(x2), _HostBox(weight), bias if bias is not None else y, r, y, self.m, self.n,
              *self.strides, float(scale), *self.tail)
        return y.view(self.out_shape)


def _launch_hooks_idle() -> bool:
    """Whether no triton launch hook is set (profilers set them; triton 3.6's are empty HookChains by default):
    a plan, which calls no hooks, is only taken then."""
    runtime = getattr(getattr(triton, "knobs", None), "runtime", None)
    if runtime is None:
        return False
    return all(hook is None or (isinstance(getattr(hook, "calls", None), list) and not hook.calls)
               for hook in (runtime.launch_enter_hook, runtime.launch_exit_hook))


def _plannable(kernel) -> bool:
    """Whether a compiled kernel can be relaunched through its launcher: triton 3.6's CompiledKernel with
    run/function/packed_metadata, and TMA descriptor metadata (so the launcher builds the tensor maps from a
    box's base, shape and strides)."""
    return (all(hasattr(kernel, a) for a in ("run", "function", "packed_metadata"))
            and getattr(kernel.metadata, "tensordesc_meta", None) is not None)


_STRATEGY = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "num_warps", "num_stages", "PERSISTENT_TMA",
             "TMA_EPILOGUE", "EPILOGUE_SUBTILE", "FLATTEN", "WARP_SPECIALIZE", "PROGRAMS_PER_SM", "EPILOGUE_16BIT")


def _config(dtype: torch.dtype, M: int, N: int) -> dict:
    """The TUNABLES for this problem: FP32_ keys for fp32, TALL_ keys for tall and skinny bf16/fp16."""
    if dtype == torch.float32:
        prefix = "FP32_"
    elif M >= 8 * N:  # few column tiles, many row tiles: tuned apart (linear_gelu_bf16_tall)
        prefix = "TALL_"
    else:
        prefix = ""
    return {name: TUNABLES[prefix + name] for name in _STRATEGY}


def _tma_ok(*tensors: torch.Tensor) -> bool:
    """TMA needs a unit last stride and 16-byte aligned base and row strides."""
    if TensorDescriptor is None:
        return False
    return all(t.stride(-1) == 1 and t.data_ptr() % 16 == 0 and (t.stride(0) * t.element_size()) % 16 == 0
               for t in tensors)


_SM_COUNT: dict = {}


def _num_sms(device: torch.device) -> int:
    if device.type != "cuda":
        return 4  # the CPU interpreter: a few programs, each walking several tiles
    if device not in _SM_COUNT:
        _SM_COUNT[device] = torch.cuda.get_device_properties(device).multi_processor_count
    return _SM_COUNT[device]


def gemm_epilogue(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None,
                  residual: torch.Tensor | None = None, scale: float = 1.0,
                  activation: str = "none", reduce: str = "none") -> torch.Tensor:
    """act(x @ weight^T + bias) * scale + residual; x (..., K), weight (N, K), residual (..., N).

    reduce="sum" returns the sum over the last dimension instead, shape (...,), summed in fp32.
    """
    key = None
    # only calls the Hopper kernel may serve pay for a key: 16-bit, tall (M >= 8 N), no row sum
    if (TUNABLES["HOPPER_LAUNCH_PLANS"] and x.is_cuda and x.dtype in (torch.bfloat16, torch.float16)
            and reduce == "none" and x.numel() >= 8 * weight.shape[0] * x.shape[-1]):
        key = _call_key(x, weight, bias, residual, activation, reduce)
        plan = _PLANS.get(key)
        if plan is not None and _launch_hooks_idle():
            y = plan(x, weight, bias, residual, scale)
            if y is not None:
                return y
    if activation not in _ACTIVATIONS:
        raise ValueError(f"gemm_epilogue: activation {activation!r} is not one of {_ACTIVATIONS}")
    if reduce not in ("none", "sum"):
        raise ValueError(f"gemm_epilogue: reduce {reduce!r} is not 'none' or 'sum'")
    if x.shape[-1] != weight.shape[1]:
        raise ValueError(f"gemm_epilogue: x has K={x.shape[-1]} but weight is {tuple(weight.shape)}")
    if x.dtype != weight.dtype:
        raise ValueError(f"gemm_epilogue: x is {x.dtype} but weight is {weight.dtype}")
    lead = x.shape[:-1]
    x2 = x.reshape(-1, x.shape[-1])
    M, K = x2.shape
    N = weight.shape[0]
    row_sum = reduce == "sum"
    if row_sum:  # fp32 partial sums land here atomically
        y = torch.zeros((M, 1), device=x.device, dtype=torch.float32)
    else:
        y = torch.empty((M, N), device=x.device, dtype=x.dtype)
    r2 = residual.reshape(M, N) if residual is not None else y
    if residual is not None and tuple(residual.shape) != (*lead, N):
        raise ValueError(f"gemm_epilogue: residual {tuple(residual.shape)} does not match {(*lead, N)}")
    cfg = _config(x.dtype, M, N)
    fp32_precision = TUNABLES["FP32_PRECISION"]
    if fp32_precision not in ("ieee", "tf32x3"):
        raise ValueError(f"gemm_epilogue: TUNABLES FP32_PRECISION={fp32_precision!r} is not 'ieee' or 'tf32x3' "
                         "(plain tf32 would fail the fp32 tolerance)")
    gelu_form = TUNABLES["GELU_16BIT"]
    if gelu_form not in ("erf", "tanh_form", "tanh_hw"):
        raise ValueError(f"gemm_epilogue: TUNABLES GELU_16BIT={gelu_form!r} is not 'erf', 'tanh_form' or 'tanh_hw'")
    lean_form = cfg["EPILOGUE_16BIT"]
    if lean_form not in ("fp32", "lean"):
        raise ValueError(f"gemm_epilogue: TUNABLES [TALL_|FP32_]EPILOGUE_16BIT={lean_form!r} is not 'fp32' or 'lean'")
    lean = lean_form == "lean" and x.dtype != torch.float32
    if activation == "gelu" and gelu_form != "erf" and x.dtype != torch.float32:
        # within a twentieth of the 16-bit tolerance of the erf form; tanh.approx is PTX: GPU only
        activation = "gelu_tanh_hw" if gelu_form == "tanh_hw" and x.device.type == "cuda" else "gelu_tanh_form"
    if M >= 8 * N and _hopper_ok(x2, weight, bias, r2 if residual is not None else None, row_sum):
        kernel, grid, fixed = _hopper_launch(x2, weight, bias, r2 if residual is not None else None, y, scale,
                                             activation)
        if key is not None and _plannable(kernel):
            if len(_PLANS) >= _MAX_PLANS:
                _PLANS.clear()
            _PLANS[key] = _HopperPlan(kernel, grid, fixed, x2, r2, y, (*lead, N))
        return y.reshape(*lead, N)
    common = {
        # lean: the bias starts the accumulator (BIAS_IN_ACC) instead of being added in the epilogue (HAS_BIAS)
        "HAS_BIAS": bias is not None and not lean, "BIAS_IN_ACC": bias is not None and lean,
        "HAS_RESIDUAL": residual is not None, "ACTIVATION": activation,
        "ROW_SUM": row_sum, "IS_FP32": x.dtype == torch.float32, "FP32_PRECISION": fp32_precision,
        "UPCAST_DOT": x.device.type == "cpu",
        "LEAN": lean,
        # add.rn.*x2 is PTX (sm_90+): the interpreter adds through fp32
        "PACKED_ADD": {torch.bfloat16: "add.rn.bf16x2", torch.float16: "add.rn.f16x2"}.get(x.dtype, "")
        if x.device.type == "cuda" else "",
        "BLOCK_M": cfg["BLOCK_M"], "BLOCK_N": cfg["BLOCK_N"], "BLOCK_K": cfg["BLOCK_K"], "GROUP_M": cfg["GROUP_M"],
        "num_warps": cfg["num_warps"], "num_stages": cfg["num_stages"],
    }
    b = bias if bias is not None else y  # never read when HAS_BIAS is False
    n_tiles = _cdiv(M, cfg["BLOCK_M"]) * _cdiv(N, cfg["BLOCK_N"])
    if cfg["PERSISTENT_TMA"] and _tma_ok(x2, weight):
        n_programs = min(n_tiles, _num_sms(x.device) * int(cfg["PROGRAMS_PER_SM"]))
        x_desc = TensorDescriptor.from_tensor(x2, [cfg["BLOCK_M"], cfg["BLOCK_K"]])
        w_desc = TensorDescriptor.from_tensor(weight, [cfg["BLOCK_N"], cfg["BLOCK_K"]])
        if cfg["EPILOGUE_SUBTILE"] not in (1, 2):
            raise ValueError(f"gemm_epilogue: EPILOGUE_SUBTILE={cfg['EPILOGUE_SUBTILE']} is not 1 or 2")
        # TMA epilogue: the residual and output rows must be TMA-aligned too (the ragged variant's N=36
        # bf16 rows are 72 bytes: it falls back to masked pointer accesses, still in the persistent kernel).
        epi_block = [cfg["BLOCK_M"], cfg["BLOCK_N"] // cfg["EPILOGUE_SUBTILE"]]
        tma_epilogue = (bool(cfg["TMA_EPILOGUE"]) and (residual is None or _tma_ok(r2))
                        and (row_sum or _tma_ok(y)))
        r_desc = TensorDescriptor.from_tensor(r2, epi_block) if tma_epilogue and residual is not None else r2
        y_desc = TensorDescriptor.from_tensor(y, epi_block) if tma_epilogue and not row_sum else y
        _gemm_epilogue_tma_kernel[(n_programs,)](
            x_desc, w_desc, r_desc, y_desc, b, r2, y,
            M, N, K,
            r2.stride(0), r2.stride(1),
            y.stride(0), y.stride(1),
            float(scale),
            NUM_PROGRAMS=n_programs, TMA_EPILOGUE=tma_epilogue, EPILOGUE_SUBTILE=cfg["EPILOGUE_SUBTILE"],
            FLATTEN=bool(cfg["FLATTEN"]),
            # the interpreter runs loops as Python loops: warp specialisation is a GPU compile-time choice
            WARP_SPECIALIZE=bool(cfg["WARP_SPECIALIZE"]) and x.device.type == "cuda",
            **common,
        )
    else:
        _gemm_epilogue_kernel[(n_tiles,)](
            x2, weight, b, r2, y,
            M, N, K,
            x2.stride(0), x2.stride(1),
            weight.stride(0), weight.stride(1),
            r2.stride(0), r2.stride(1),
            y.stride(0), y.stride(1),
            float(scale),
            EVEN_K=K % cfg["BLOCK_K"] == 0, **common,
        )
    if row_sum:
        return y.reshape(lead).to(x.dtype)
    return y.reshape(*lead, N)


class ModelNew(nn.Module):
    """Same parameters as the specs' Model (an nn.Linear), one fused kernel in forward."""

    def __init__(self, in_features: int, out_features: int, scale: float, activation: str = "gelu",
                 reduce: str = "none"):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.scale = scale
        self.activation = activation
        self.reduce = reduce

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        return gemm_epilogue(x, self.linear.weight, self.linear.bias, residual, self.scale, self.activation,
                             self.reduce)
