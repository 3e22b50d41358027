"""RMS norm over the last dimension with a learned scale: y = x * rsqrt(mean(x^2) + eps) * w; or over another
dim (rms_norm_dim: columns, coalesced along the dims after it).

Paths, chosen by the launcher from the row width N and dtype:
- fused (N <= MAX_FUSED_N): the row stays in registers; one read of x, one write of y (w stays in L2).
  Narrow rows share a program.
- COLS_CONSTEXPR: the fused kernel compiled for the row width, so register chunks that lie wholly past the
  row (a width short of its power-of-two tile) compile away instead of running masked; for 4096 or 8192 it
  only folds the mask and the 1/N.
- PAIRS (bf16 x and weight; even width): the fused path on 32-bit words of two bf16 values, the width
  compiled in: the low value is word << 16 and the high one word & 0xFFFF0000 (one integer op a value), the
  squares summed in one reduction over the (low, high) tuple, y packed two values a word by one
  cvt.rn.bf16x2 (the interpreter: the same rounding in Triton ops). Warps as in layernorm: one per
  PAIR_ROW_BYTES_PER_WARP bytes (a 4096-wide row: 1), or PAIR_WARPS. Ported from layernorm, where it took
  65536x5120 bf16 from 84% to 98.9% of copy bandwidth on the H200
  (benchmarks/results/sweep-20261201T010657Z.json in commit d24de399f).
- RELOAD: the fused path's rows (of at least RELOAD_MIN_N values) by a kernel that holds one chunk, not the
  row: x^2 summed over the row's chunks, then a second read of the row (L1/L2-warm) for y. What
  torch.compile generates for this op (XBLOCK 1, R0_BLOCK 8192, 16 warps on the H200 for 8192 fp32:
  benchmarks/results/inductor-code-20261201T0837Z.txt); x is read from DRAM once either way.
- looped (wider rows): a persistent grid walks rows; pass 1 accumulates x^2 per lane in fp32, pass 2
  re-reads the row from its end backwards (L2-warm) and writes y.
"""

import torch
import triton
import triton.language as tl
from torch import nn

from corpus.kernels._shared.bf16_words import _bf16_pair, _bf16_word, _row_sum
from corpus.kernels._shared.device import _num_sms

TUNABLES = {
    "MAX_FUSED_N": 16384,  # widest row kept whole in registers
    "BLOCK_LOOP": 4096,
    "num_warps_loop": 16,
    "PROGRAMS_PER_SM": 1,
    "num_warps_fused": 0,  # fused path: 0 = from the row's bytes (ROW_BYTES_PER_WARP)
    "ROW_BYTES_PER_WARP": 1024,  # fused path: one warp per this many bytes of the rows a program holds
    "ROWS_FUSED": 0,  # fused path: rows per program, 0 = as many as fill 2048 lanes (power of 2)
    "COLS_CONSTEXPR": False,  # fused path: the row width compiled in (lanes past it compile away)
    "PAIRS": False,  # fused path for bf16: 32-bit words of two values, width compiled in (see the docstring)
    "PAIR_WARPS": 0,  # pairs path: warps, 0 = from the row's bytes (PAIR_ROW_BYTES_PER_WARP)
    "PAIR_ROW_BYTES_PER_WARP": 8192,  # pairs path: one warp per this many bytes of the rows a program holds
    # fused path for rows of at least RELOAD_MIN_N not on the pairs path: the reload kernel, one chunk of the row
    # live, x re-read for y. H200: 8192 fp32 0.5032/0.5034 ms against the fused kernel's 0.5105/0.5112 (torch.compile
    # 0.5005), 4096 bf16 (8 warps) 0.5018 against 0.5206/0.5211
    # (benchmarks/results/sweep-20261201T084141Z.json in commit 225df4dcd)
    "RELOAD": True,
    "RELOAD_MIN_N": 2048,
    "RELOAD_CHUNK": 8192,  # reload kernel: values per step at most (power of 2; the row's power of 2 if less)
    # reload kernel: warps, 0 = 16 values a thread (8192 fp32 with 16 warps: 0.5032 ms, 8 warps 0.5210, 32 0.5116;
    # 4096 bf16 with 8: 0.5018, 4 0.5382, 16 0.5716)
    "num_warps_reload": 0,
    # a dim other than the last (KernelBench's RMSNorm over the 64 channels of (112, 64, 512, 512)): the column
    # kernel, COLUMN_ELEMS values a program (all C of a block of inner columns), for C up to COLUMN_MAX_C
    "COLUMN_MAX_C": 1024,
    "COLUMN_ELEMS": 4096,
    "num_warps_columns": 4,
}


@triton.jit
def _rmsnorm_fused_kernel(
    x_ptr, w_ptr, y_ptr, n_rows, n_cols_arg, stride_x, stride_y, eps,
    ROWS: tl.constexpr, BLOCK: tl.constexpr, N_CONST: tl.constexpr,
):
    if N_CONST > 0:  # the width compiled in: masks of chunks past it are constant
        n_cols = N_CONST
    else:
        n_cols = n_cols_arg
    rows = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK)
    col_mask = cols < n_cols
    mask = (rows[:, None] < n_rows) & col_mask[None, :]
    x = tl.load(x_ptr + rows[:, None] * stride_x + cols[None, :], mask=mask, other=0.0).to(tl.float32)
    rstd = tl.rsqrt(tl.sum(x * x, axis=1) / n_cols + eps)
    w = tl.load(w_ptr + cols, mask=col_mask, other=0.0).to(tl.float32)
    y = x * rstd[:, None] * w[None, :]
    tl.store(y_ptr + rows[:, None] * stride_y + cols[None, :], y.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _rmsnorm_pairs_kernel(
    xw_ptr, ww_ptr, yw_ptr, n_rows, stride_xw, stride_yw, eps,
    N: tl.constexpr, ROWS: tl.constexpr, BLOCK_P: tl.constexpr, ASM: tl.constexpr,
):
    """bf16 rows as 32-bit words (two values each); strides in words. Masked words load as 0: no square."""
    rows = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    pairs = tl.arange(0, BLOCK_P)
    pmask = pairs < N // 2
    mask = (rows[:, None] < n_rows) & pmask[None, :]
    lo, hi = _bf16_pair(tl.load(xw_ptr + rows[:, None] * stride_xw + pairs[None, :], mask=mask, other=0))
    rstd = tl.rsqrt(_row_sum(lo * lo, hi * hi) / N + eps)
    w_lo, w_hi = _bf16_pair(tl.load(ww_ptr + pairs, mask=pmask, other=0))
    y_lo = lo * rstd[:, None] * w_lo[None, :]
    y_hi = hi * rstd[:, None] * w_hi[None, :]
    tl.store(yw_ptr + rows[:, None] * stride_yw + pairs[None, :], _bf16_word(y_lo, y_hi, ASM), mask=mask)


@triton.jit
def _rmsnorm_reload_kernel(
    x_ptr, w_ptr, y_ptr, stride_x, stride_y, eps,
    N: tl.constexpr, CHUNK: tl.constexpr,
):
    """One row a program in CHUNK-value steps (unrolled: N is compiled in): pass 1 sums x^2 per lane, pass 2
    re-reads the row (still in L1/L2: evict_last on pass 1, evict_first on pass 2) and writes y. Only a chunk
    is live in registers, so more rows are in flight on an SM than with the whole row held."""
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * stride_x
    y_row = y_ptr + row * stride_y
    cols = tl.arange(0, CHUNK)
    acc = tl.zeros([CHUNK], tl.float32)
    for k in tl.static_range((N + CHUNK - 1) // CHUNK):
        offs = k * CHUNK + cols
        x = tl.load(x_row + offs, mask=offs < N, other=0.0, eviction_policy="evict_last").to(tl.float32)
        acc += x * x
    rstd = tl.rsqrt(tl.sum(acc, axis=0) / N + eps)
    for k in tl.static_range((N + CHUNK - 1) // CHUNK):
        offs = k * CHUNK + cols
        mask = offs < N
        x = tl.load(x_row + offs, mask=mask, other=0.0, eviction_policy="evict_first").to(tl.float32)
        w = tl.load(w_ptr + offs, mask=mask, other=0.0, eviction_policy="evict_last").to(tl.float32)
        tl.store(y_row + offs, (x * rstd * w).to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _rmsnorm_looped_kernel(
    x_ptr, w_ptr, y_ptr, n_rows, n_cols, stride_x, stride_y, eps,
    BLOCK: tl.constexpr,
):
    cols = tl.arange(0, BLOCK)
    for row in range(tl.program_id(0), n_rows, tl.num_programs(0)):
        x_row = x_ptr + tl.cast(row, tl.int64) * stride_x
        y_row = y_ptr + tl.cast(row, tl.int64) * stride_y
        acc = tl.zeros([BLOCK], tl.float32)
        for start in range(0, n_cols, BLOCK):
            x = tl.load(x_row + start + cols, mask=start + cols < n_cols, other=0.0).to(tl.float32)
            acc += x * x
        rstd = tl.rsqrt(tl.sum(acc, axis=0) / n_cols + eps)
        last = tl.cdiv(n_cols, BLOCK) - 1
        for i in range(last + 1):  # newest blocks first, while they are still in L2
            start = (last - i) * BLOCK
            mask = start + cols < n_cols
            x = tl.load(x_row + start + cols, mask=mask, other=0.0).to(tl.float32)
            w = tl.load(w_ptr + start + cols, mask=mask, other=0.0).to(tl.float32)
            tl.store(y_row + start + cols, (x * rstd * w).to(y_ptr.dtype.element_ty), mask=mask)


def _fused_warps(rows: int, n_cols: int, element_size: int, bytes_per_warp: int) -> int:
    """A power of two in [2, 32]: one warp per bytes_per_warp of the rows' real bytes (the padded tile
    would over-count); 32 warps for 8192-wide fp32 rows measured best on the H200
    (sweep-20261130T131458Z.json in commit 8bfc09a7e)."""
    want = max(1, rows * n_cols * element_size // bytes_per_warp)
    return max(2, min(32, 1 << (want.bit_length() - 1)))


def _pair_warps(rows: int, n_cols: int, bytes_per_warp: int) -> int:
    """Warps for the pairs path: the next power of two of the rows' bf16 bytes / bytes_per_warp, in [1, 16]
    (layernorm's rule: its 5120-wide bf16 rows ran best with 2)."""
    want = triton.cdiv(rows * n_cols * 2, bytes_per_warp)
    return min(16, triton.next_power_of_2(want))


def _pair_words(x2: torch.Tensor, w: torch.Tensor):
    """x2 and w viewed as 32-bit words of two bf16 values, or None where the pairs path does not apply."""
    tensors = (x2, w)
    if any(t.dtype != torch.bfloat16 for t in tensors) or x2.shape[1] % 2 or x2.stride(0) % 2:
        return None
    if any(t.storage_offset() % 2 or t.data_ptr() % 4 for t in tensors):
        return None
    return tuple(t.view(torch.int32) for t in tensors)


@triton.jit
def _rmsnorm_columns_kernel(
    x_ptr, w_ptr, y_ptr, n_inner, eps,
    C: tl.constexpr, BLOCK_C: tl.constexpr, BLOCK_I: tl.constexpr, HAS_W: tl.constexpr,
):
    """Over dim 1 of x viewed as (outer, C, inner): a program holds BLOCK_I contiguous columns of one outer
    index, all C of their values in registers; loads and stores run along the inner dims."""
    blocks = tl.cdiv(n_inner, BLOCK_I)
    outer = tl.program_id(0) // blocks
    cols = (tl.program_id(0) % blocks) * BLOCK_I + tl.arange(0, BLOCK_I)
    ch = tl.arange(0, BLOCK_C)
    offs = outer.to(tl.int64) * C * n_inner + ch[:, None] * n_inner + cols[None, :]
    mask = (ch[:, None] < C) & (cols[None, :] < n_inner)
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    rms = tl.sqrt(tl.sum(x * x, axis=0) / C + eps)
    y = x / rms[None, :]
    if HAS_W:
        y = y * tl.load(w_ptr + ch, mask=ch < C, other=0.0).to(tl.float32)[:, None]
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


def rms_norm_dim(x: torch.Tensor, weight: torch.Tensor | None, eps: float, dim: int) -> torch.Tensor:
    """RMS norm over one dim of x (x / sqrt(mean(x^2, dim) + eps), times weight along that dim if given).
    The last dim takes the row kernels; another dim of at most COLUMN_MAX_C values the column kernel."""
    dim = dim % x.dim()
    n = x.shape[dim]
    if dim == x.dim() - 1:
        w = weight if weight is not None else torch.ones(n, dtype=x.dtype, device=x.device)
        return rms_norm_rows(x, w, eps)
    if n > TUNABLES["COLUMN_MAX_C"]:
        raise ValueError(f"rms norm over dim {dim} of {n} values: the column kernel holds at most "
                         f"{TUNABLES['COLUMN_MAX_C']}")
    if weight is not None and weight.numel() != n:
        raise ValueError(f"rms norm over dim {dim} of {n} values got weight {tuple(weight.shape)}")
    xc = x.contiguous()
    y = torch.empty_like(xc)
    inner = 1
    for s in xc.shape[dim + 1:]:
        inner *= s
    outer = xc.numel() // (n * inner)
    block_c = triton.next_power_of_2(n)
    block_i = max(16, min(triton.next_power_of_2(inner), TUNABLES["COLUMN_ELEMS"] // block_c))
    _rmsnorm_columns_kernel[(outer * triton.cdiv(inner, block_i),)](
        xc, weight if weight is not None else xc, y, inner, eps,
        C=n, BLOCK_C=block_c, BLOCK_I=block_i, HAS_W=weight is not None, num_warps=TUNABLES["num_warps_columns"],
    )
    return y


def rms_norm_rows(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """RMS norm over x's trailing dims of weight's shape, as rows of their product."""
    n_cols = weight.numel()
    if tuple(x.shape[x.dim() - weight.dim():]) != tuple(weight.shape):
        raise ValueError(f"rms norm of x {tuple(x.shape)} got weight {tuple(weight.shape)}: it must be x's "
                         "trailing dims")
    shape = x.shape
    x2 = x.reshape(-1, n_cols)
    if x2.stride(-1) != 1:
        x2 = x2.contiguous()
    n_rows = x2.shape[0]
    y = torch.empty((n_rows, n_cols), dtype=x.dtype, device=x.device)
    w = weight.contiguous()
    t = TUNABLES
    if n_cols <= t["MAX_FUSED_N"]:
        block = triton.next_power_of_2(n_cols)
        rows = t["ROWS_FUSED"] or max(1, min(2048 // block, triton.next_power_of_2(n_rows)))  # narrow rows
        grid = (triton.cdiv(n_rows, rows),)
        words = _pair_words(x2, w) if t["PAIRS"] else None
        if words is not None:
            xw, ww = words
            yw = y.view(torch.int32)
            _rmsnorm_pairs_kernel[grid](
                xw, ww, yw, n_rows, xw.stride(0), yw.stride(0), eps,
                N=n_cols, ROWS=rows, BLOCK_P=max(1, block // 2), ASM=x.is_cuda,
                num_warps=t["PAIR_WARPS"] or _pair_warps(rows, n_cols, t["PAIR_ROW_BYTES_PER_WARP"]),
            )
        elif t["RELOAD"] and n_cols >= t["RELOAD_MIN_N"]:
            chunk = min(t["RELOAD_CHUNK"], block)
            _rmsnorm_reload_kernel[(n_rows,)](
                x2, w, y, x2.stride(0), y.stride(0), eps,
                N=n_cols, CHUNK=chunk, num_warps=t["num_warps_reload"] or max(1, min(32, chunk // 512)),
            )
        else:
            warps = t["num_warps_fused"] or _fused_warps(rows, n_cols, x2.element_size(), t["ROW_BYTES_PER_WARP"])
            _rmsnorm_fused_kernel[grid](
                x2, w, y, n_rows, n_cols, x2.stride(0), y.stride(0), eps,
                ROWS=rows, BLOCK=block, N_CONST=n_cols if t["COLS_CONSTEXPR"] else 0, num_warps=warps,
            )
    else:
        grid = (min(n_rows, _num_sms(x.device) * t["PROGRAMS_PER_SM"]),)
        _rmsnorm_looped_kernel[grid](
            x2, w, y, n_rows, n_cols, x2.stride(0), y.stride(0), eps,
            BLOCK=t["BLOCK_LOOP"], num_warps=t["num_warps_loop"],
        )
    return y.reshape(shape)


class ModelNew(nn.Module):
    """Same parameter (created the same way) as the family's specs: weight of shape (N,)."""

    def __init__(self, normalized_shape: int, eps: float = 1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(normalized_shape))
        self.eps = eps

    def forward(self, x):
        return rms_norm_rows(x, self.weight, self.eps)
