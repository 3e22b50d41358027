"""The Hopper paths of the gemm_epilogue family: TMA descriptors, and the warp-specialised Gluon kernel that
serves tall 16-bit problems without the row sum on sm_90 (see kernel.py), with its launch plans. Inlined into
the family's candidate source (ingest/bundle.py); kernel.py passes its TUNABLES in as `t`.
"""

import torch
import triton

from corpus.kernels._shared.device import _capability, _num_sms

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


def _tma_ok(*tensors: torch.Tensor) -> bool:
    """TMA needs a unit last stride and 16-byte aligned base and row strides."""
    if TensorDescriptor is None:
        return False
    return all(t.stride(-1) == 1 and t.data_ptr() % 16 == 0 and (t.stride(0) * t.element_size()) % 16 == 0
               for t in tensors)


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
                        K_STEPS: gl.constexpr, STAGES: gl.constexpr):
        """One MMA warp group's wgmmas for a tile (its HALF rows of each x slot): each waited for at once and
        its slot freed, so the loader runs a slot further ahead (the other MMA warp group keeps the tensor cores
        busy meanwhile). (acc, the next ring step)."""
        for k in range(K_STEPS):
            s = step % STAGES
            mbarrier.wait(ready.index(s), (step // STAGES) & 1)
            acc = warpgroup_mma(x_ring.index(s).slice(WG * HALF, HALF), w_ring.index(s).permute((1, 0)), acc,
                                is_async=True)
            acc = warpgroup_mma_wait(0, deps=(acc,))
            mbarrier.arrive(empty.index(s))
            step += 1
        return acc, step

    @gluon.jit
    def _hopper_mma(x_ring, w_ring, ready, empty, hbuf, hfull, hfree, b_ptr, r_ptr, y_ptr, M, N, stride_rm,
                    stride_ym, scale, n_tiles, n_blocks_m, WG: gl.constexpr, K_STEPS: gl.constexpr,
                    N_BLOCKS_N: gl.constexpr, STAGES: gl.constexpr, GROUP_M: gl.constexpr, HAS_BIAS: gl.constexpr,
                    HAS_RESIDUAL: gl.constexpr, ACTIVATION: gl.constexpr):
        # One MMA warp group: rows [64 WG, 64 WG + 64) of each tile; x W^T + b, rounded to 16 bits, goes to the
        # epilogue warps through hbuf, and the group starts its next tile. In the program's last tile the group
        # runs the epilogue of its rows itself.
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
            acc, step = _hopper_k_steps(x_ring, w_ring, ready, empty, acc, step, WG, HALF, K_STEPS, STAGES)
            mbarrier.wait(hfree.index(WG), (n_done & 1) ^ 1)  # the epilogue warps have read this group's last rows
            mine.store(acc.to(hbuf.dtype))
            mbarrier.arrive(hfull)
            if tile + gl.num_programs(0) >= n_tiles:  # the program's last tile
                _thread_barrier()  # the whole group's rows are in before any thread reads them back
                _hopper_tail_rows(hbuf, r_ptr, y_ptr, pm, pn, M, N, stride_rm, stride_ym, scale, WG * HALF,
                                  (WG + 1) * HALF, HAS_RESIDUAL, ACTIVATION)
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
                         HAS_RESIDUAL: gl.constexpr, ACTIVATION: gl.constexpr):
        # The epilogue warps: act(h) * scale, rounded, + residual, rounded, in CHUNK-row slices with 16-byte loads
        # and stores. Each slice's residual is loaded a slice ahead (the next tile's first before this tile's h is
        # in); each MMA warp group gets its half of hbuf back as soon as it has been read. One loop body for every
        # tile (a loop, not unrolled: hot in the instruction cache); the program's last tile the groups run.
        BM: gl.constexpr = hbuf.shape[0]
        BN: gl.constexpr = hbuf.shape[1]
        N_CHUNKS: gl.constexpr = BM // CHUNK
        HALF_CHUNKS: gl.constexpr = N_CHUNKS // 2
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
            chunks = _hopper_row_views(hbuf, CHUNK)
            per_half = HALF_CHUNKS  # chunks of each group's half taken here
            if next_tile >= n_tiles:  # the last tile: the MMA warp groups run its epilogue
                per_half = 0
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
                    mbarrier.arrive(hfree.index(0))  # (not in the last tile, where none waits)
            mbarrier.arrive(hfree.index(1))
            n_done += 1  # noqa: SIM113  (Gluon loops take no enumerate)

    @gluon.jit
    def _gemm_epilogue_hopper_kernel(x_desc, w_desc, b_ptr, r_ptr, y_ptr, M, N, stride_rm, stride_ym, scale, n_tiles,
                                     n_blocks_m, K_STEPS: gl.constexpr, N_BLOCKS_N: gl.constexpr,
                                     STAGES: gl.constexpr, GROUP_M: gl.constexpr, CHUNK: gl.constexpr,
                                     HAS_BIAS: gl.constexpr, HAS_RESIDUAL: gl.constexpr, ACTIVATION: gl.constexpr):
        """Persistent, warp-specialised: two MMA warp groups (the default partition and a worker), two epilogue
        warps and a loader warp; a program's last tile, which nothing overlaps, the MMA warp groups finish
        themselves. 168 registers for the MMA groups (a 64x256 fp32 accumulator is
        128), 152 for the third warp group, which the epilogue and loader warps share (setmaxnreg is per warp group): 3 x 128 threads
        x 168 fill the 64K registers. 16 warps would cap every thread at 128."""
        BM: gl.constexpr = x_desc.block_type.shape[0]
        BN: gl.constexpr = w_desc.block_type.shape[0]
        dtype: gl.constexpr = x_desc.dtype
        x_ring = gl.allocate_shared_memory(dtype, [STAGES] + x_desc.block_type.shape, x_desc.layout)
        w_ring = gl.allocate_shared_memory(dtype, [STAGES] + w_desc.block_type.shape, w_desc.layout)
        # row-major, 16-byte vectors XOR-swizzled by row % 8: row views of it are the same bytes
        hbuf = gl.allocate_shared_memory(dtype, [BM, BN], gl.SwizzledSharedLayout(8, 1, 8, order=[1, 0]))
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
                           HAS_RESIDUAL, ACTIVATION)),
            (_hopper_mma, (x_ring, w_ring, ready, empty, hbuf, hfull, hfree, b_ptr, r_ptr, y_ptr, M, N, stride_rm,
                           stride_ym, scale, n_tiles, n_blocks_m, 1, K_STEPS, N_BLOCKS_N, STAGES, GROUP_M, HAS_BIAS,
                           HAS_RESIDUAL, ACTIVATION)),
            (_hopper_epilogue, (hbuf, hfull, hfree, r_ptr, y_ptr, M, N, stride_rm, stride_ym, scale, n_tiles,
                                n_blocks_m, N_BLOCKS_N, GROUP_M, CHUNK, HAS_RESIDUAL, ACTIVATION)),
            (_hopper_loader, (x_desc, w_desc, x_ring, w_ring, ready, empty, n_tiles, n_blocks_m, K_STEPS, N_BLOCKS_N,
                              STAGES, GROUP_M)),
        ], [4, 2, 1], [168, 152, 152])


# Host-side caches: a launch's Python work is of the order of the tall GEMM's 0.11 ms on the GPU (0.10-0.12 ms
# a call measured on the H200, benchmarks/results/gemm-hopper-timing-h200-20261201T234624Z.json
# in commit 8cf6c933e), and where it is not hidden behind queued GPU work the GPU waits for it.
_LAYOUTS: dict = {}


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



def _hopper_ok(x2: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, r2: torch.Tensor | None,
               row_sum: bool, t: dict) -> bool:
    """Whether the Hopper kernel serves this call: TALL_HOPPER_WS on, Gluon present, an sm_90 GPU, 16-bit, no row
    sum, x and W fit for TMA, bias and residual rows with unit stride."""
    return (bool(t["TALL_HOPPER_WS"]) and gluon is not None and x2.is_cuda and not row_sum
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
_HOPPER_KNOBS = ("HOPPER_STAGES", "HOPPER_BK", "HOPPER_GROUP_M", "HOPPER_CHUNK")
# what a call's path and the Hopper kernel's compilation depend on besides the arguments
_PLAN_TUNABLES = ("TALL_HOPPER_WS", "GELU_16BIT", *_HOPPER_KNOBS)
_PLANS: dict = {}  # _HopperPlan by _call_key
_MAX_PLANS = 256


def _hopper_launch(x2: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, r2: torch.Tensor | None,
                   y: torch.Tensor, scale: float, activation: str, t: dict) -> tuple:
    """Run the Hopper kernel into y (M, N), contiguous, through the JIT. Returns (the compiled kernel, its grid,
    the arguments fixed by the problem: tile counts and constexprs, by parameter name)."""
    M, K = x2.shape
    N = weight.shape[0]
    BM, BN = _HOPPER_TILE
    stages, bk, group_m, chunk = (t[name] for name in _HOPPER_KNOBS)
    ring_bytes = stages * (BM + BN) * bk * x2.element_size()
    if (bk not in (32, 64) or chunk not in (8, 16) or stages < 2
            or ring_bytes + BM * BN * x2.element_size() > _HOPPER_SMEM_BYTES - 1024):
        raise ValueError(f"gemm_epilogue: TUNABLES HOPPER_STAGES={stages}, HOPPER_BK={bk}, HOPPER_CHUNK={chunk}: BK "
                         "must be 32 or 64, CHUNK 8 or 16, and 2 or more ring slots must fit in shared memory beside "
                         "the 64 KB hand-off buffer")
    x_desc = GluonTensorDescriptor.from_tensor(x2, [BM, bk], _smem_layout(BM, bk, x2.dtype))
    w_desc = GluonTensorDescriptor.from_tensor(weight, [BN, bk], _smem_layout(BN, bk, x2.dtype))
    n_bm, n_bn = _cdiv(M, BM), _cdiv(N, BN)
    n_tiles = n_bm * n_bn
    grid = min(_num_sms(x2.device), n_tiles)
    r = r2 if r2 is not None else y  # never read without a residual
    constexprs = {"K_STEPS": _cdiv(K, bk), "N_BLOCKS_N": n_bn, "STAGES": stages, "GROUP_M": group_m,
                  "CHUNK": chunk, "HAS_BIAS": bias is not None, "HAS_RESIDUAL": r2 is not None,
                  "ACTIVATION": activation}
    kernel = _gemm_epilogue_hopper_kernel[(grid,)](
        x_desc, w_desc, bias if bias is not None else y, r, y, M, N, r.stride(0), y.stride(0), float(scale), n_tiles,
        n_bm, **constexprs, num_warps=4)
    return kernel, grid, {"n_tiles": n_tiles, "n_blocks_m": n_bm, **constexprs}



# Launch plans. A launch through the JIT costs ~0.1 ms of host Python (binding 21 arguments, specialising 12,
# validating two descriptors, choosing the path), as long as the kernel's 0.11 ms on the GPU: where no GPU work is
# queued ahead the GPU waits for it (benchmarks/results/gemm-hopper-timing-h200-20261201T234624Z.json
# in commit 8cf6c933e). A repeat call of one problem takes the plan the first call left: the kernel it
# compiled, relaunched through its launcher (27.7 us of host time a call against 104.8,
# benchmarks/results/gemm-hopper-timing-h200-20261202T014111Z.json in commit 0b14644a5).


def _call_key(x, weight, bias, residual, activation: str, reduce: str, t: dict) -> tuple:
    """Everything a call's path and the JIT's specialisation of the Hopper kernel depend on: shapes and strides
    (its integer arguments, the reshapes), dtypes, devices, the pointers' 16-byte alignment (outputs come from
    the caching allocator, always aligned), the epilogue and the TUNABLES that pick or compile the path."""
    return (activation, reduce, x.shape, x.stride(), x.dtype, x.device, x.data_ptr() % 16 == 0,
            weight.shape, weight.stride(), weight.dtype, weight.device, weight.data_ptr() % 16 == 0,
            None if bias is None else (bias.shape, bias.stride(), bias.dtype, bias.device, bias.data_ptr() % 16 == 0),
            None if residual is None else (residual.shape, residual.stride(), residual.dtype, residual.device,
                                           residual.data_ptr() % 16 == 0),
            tuple(t[name] for name in _PLAN_TUNABLES))



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



def _plannable(kernel) -> bool:
    """Whether a compiled kernel can be relaunched through its launcher: triton 3.6's CompiledKernel with
    run/function/packed_metadata, and TMA descriptor metadata (so the launcher builds the tensor maps from a
    box's base, shape and strides)."""
    return (all(hasattr(kernel, a) for a in ("run", "function", "packed_metadata"))
            and getattr(kernel.metadata, "tensordesc_meta", None) is not None)

