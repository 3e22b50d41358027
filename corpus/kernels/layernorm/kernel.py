"""Layer norm over the last dimension (or the trailing dims of the weight's shape, as rows of their product)
with an elementwise affine (weight, bias), fp32 statistics.

Paths, chosen by the launcher from the row width N and dtype:
- fused (N <= MAX_FUSED_N): the row stays in registers: mean, then the centred variance (two-pass
  numerics, one pass over memory), then y = (x - mean) * rstd * w + b. Narrow rows share a program.
  Bytes moved: read x once, write y once (+ w and b, which stay in L2).
- COLS_CONSTEXPR: the fused kernel compiled for the row width, so register chunks that lie wholly past the
  row (5120 in an 8192-lane tile: a quarter of each thread's values) compile away instead of running masked.
- PAIRS (the default for bf16 x, weight and bias of even width): the fused path on 32-bit words of two bf16
  values, the width compiled in: the low value is word << 16 and the high one word & 0xFFFF0000 (one integer
  op a value instead of two or three), the squares summed in one reduction over the (low, high) tuple (one
  FFMA a value), y packed two values a word by one cvt.rn.bf16x2 (the interpreter: the same rounding in
  Triton ops). Few warps win: one per PAIR_ROW_BYTES_PER_WARP (8192) bytes of a program's rows, so a
  5120-wide row gets 2. On the H200 (65536x5120, benchmarks/results/sweep-20261201T010657Z.json
  in commit d24de399f) that ran 0.319 ms (98.9% of copy bandwidth) against 0.325 with 4 warps, 0.329
  with 8, and 0.376 for the fused kernel's default (8 warps, width not compiled in); COLS_CONSTEXPR with 4
  warps ran 0.326.
- RELOAD: the fused path's rows (of at least RELOAD_MIN_N values) by a kernel that holds one chunk, not the
  row: per-lane Welford statistics over the row's chunks, merged in two trees, then a second read of the
  row (L1/L2-warm) for y.
  What torch.compile generates for this op (XBLOCK 1, R0_BLOCK 2048, 16 warps on the H200 for 4096 fp32:
  benchmarks/results/inductor-code-20261201T0837Z.txt); x is read from DRAM once either way.
- split (wider rows, fewer than one a SM: 16 rows of 4194304): each row cut into chunks, a program each: per-lane
  Welford statistics merged into the chunk's; a second kernel merges a row's chunks (Chan); a third writes y,
  each program owning a block of columns of every row so that w and b are read once.
- looped (wider rows): a persistent grid walks rows; pass 1 merges per-block (count, mean, M2)
  statistics with Chan's formula (no sum-of-squares cancellation), pass 2 re-reads the row from its
  end backwards (L2-warm) and writes y.
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
    "PAIRS": True,  # fused path for bf16: 32-bit words of two values, width compiled in (see the docstring)
    "PAIR_WARPS": 0,  # pairs path: warps, 0 = from the row's bytes (PAIR_ROW_BYTES_PER_WARP)
    "PAIR_ROW_BYTES_PER_WARP": 8192,  # pairs path: one warp per this many bytes of the rows a program holds
    # fused path for rows of at least RELOAD_MIN_N not on the pairs path: the reload kernel, one chunk of the row
    # live, x re-read for y. H200, 4096 fp32: 0.2519/0.2522 ms against the fused kernel's 0.2606/0.2616
    # (torch.compile 0.2526; chunks of 4096 0.2514, 1024 0.2528; 8 warps 0.2561, 4 warps 0.2829:
    # benchmarks/results/sweep-20261201T084141Z.json in commit 225df4dcd)
    "RELOAD": True,
    "RELOAD_MIN_N": 2048,
    "RELOAD_CHUNK": 2048,  # reload kernel: values per step at most (power of 2; the row's power of 2 if less)
    "num_warps_reload": 16,
    # rows wider than MAX_FUSED_N, fewer than SPLIT_BELOW_ROWS_PER_SM a SM: each row split over programs
    # (about SPLIT_PROGRAMS_PER_SM a SM in all), per-chunk Welford statistics, then y (two reads, one write)
    "SPLIT_BELOW_ROWS_PER_SM": 1,
    "SPLIT_PROGRAMS_PER_SM": 8,
    "num_warps_split": 8,
    "APPLY_BLOCK": 4096,  # split path, y: columns a program owns in every row
    "num_warps_apply": 8,
}


@triton.jit
def _layernorm_fused_kernel(
    x_ptr, w_ptr, b_ptr, y_ptr, n_rows, n_cols_arg, stride_x, stride_y, eps,
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
    mean = tl.sum(x, axis=1) / n_cols
    xc = tl.where(col_mask[None, :], x - mean[:, None], 0.0)  # rows past the last are never stored
    var = tl.sum(xc * xc, axis=1) / n_cols
    rstd = tl.rsqrt(var + eps)
    w = tl.load(w_ptr + cols, mask=col_mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + cols, mask=col_mask, other=0.0).to(tl.float32)
    y = xc * rstd[:, None] * w[None, :] + b[None, :]
    tl.store(y_ptr + rows[:, None] * stride_y + cols[None, :], y.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _layernorm_pairs_kernel(
    xw_ptr, ww_ptr, bw_ptr, yw_ptr, n_rows, stride_xw, stride_yw, eps,
    N: tl.constexpr, ROWS: tl.constexpr, BLOCK_P: tl.constexpr, ASM: tl.constexpr,
):
    """bf16 rows as 32-bit words (two values each); strides in words."""
    rows = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    pairs = tl.arange(0, BLOCK_P)
    pmask = pairs < N // 2
    mask = (rows[:, None] < n_rows) & pmask[None, :]
    lo, hi = _bf16_pair(tl.load(xw_ptr + rows[:, None] * stride_xw + pairs[None, :], mask=mask, other=0))
    mean = tl.sum(lo + hi, axis=1) / N
    lo_c = tl.where(pmask[None, :], lo - mean[:, None], 0.0)  # the columns alone: constant per register
    hi_c = tl.where(pmask[None, :], hi - mean[:, None], 0.0)
    rstd = tl.rsqrt(_row_sum(lo_c * lo_c, hi_c * hi_c) / N + eps)
    w_lo, w_hi = _bf16_pair(tl.load(ww_ptr + pairs, mask=pmask, other=0))
    b_lo, b_hi = _bf16_pair(tl.load(bw_ptr + pairs, mask=pmask, other=0))
    y_lo = lo_c * rstd[:, None] * w_lo[None, :] + b_lo[None, :]
    y_hi = hi_c * rstd[:, None] * w_hi[None, :] + b_hi[None, :]
    tl.store(yw_ptr + rows[:, None] * stride_yw + pairs[None, :], _bf16_word(y_lo, y_hi, ASM), mask=mask)


@triton.jit
def _layernorm_reload_kernel(
    x_ptr, w_ptr, b_ptr, y_ptr, stride_x, stride_y, eps,
    N: tl.constexpr, CHUNK: tl.constexpr,
):
    """One row a program in CHUNK-value steps (unrolled: N is compiled in). Pass 1 keeps a per-lane Welford
    (mean, M2) with each step's 1/count a constant; the row's mean is the sum of the lanes' sums over N, its M2
    the sum of the lanes' M2 + count * (lane mean - mean)^2 (two trees: merging means pairwise in one tree
    rounds at the scale of the mean: tests/corpus/kernels/test_layernorm.py holds the error of rows of mean 100
    and spread 3 to the two-pass kernel's). Pass 2 re-reads the
    row (still in L1/L2: evict_last on pass 1, evict_first on pass 2) and writes y. Only a chunk is live in
    registers, so more rows are in flight on an SM than with the whole row held."""
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * stride_x
    y_row = y_ptr + row * stride_y
    cols = tl.arange(0, CHUNK)
    mean = tl.zeros([CHUNK], tl.float32)
    m2 = tl.zeros([CHUNK], tl.float32)
    for k in tl.static_range((N + CHUNK - 1) // CHUNK):
        offs = k * CHUNK + cols
        if (k + 1) * CHUNK <= N:
            x = tl.load(x_row + offs, eviction_policy="evict_last").to(tl.float32)
            d = x - mean
            mean += d * (1.0 / (k + 1))
            m2 += d * (x - mean)
        else:
            mask = offs < N
            x = tl.load(x_row + offs, mask=mask, other=0.0, eviction_policy="evict_last").to(tl.float32)
            d = x - mean
            mean_new = mean + d * (1.0 / (k + 1))
            m2 = tl.where(mask, m2 + d * (x - mean_new), m2)
            mean = tl.where(mask, mean_new, mean)
    seen = ((N + CHUNK - 1 - cols) // CHUNK).to(tl.float32)  # values each lane took
    mean_r = tl.sum(mean * seen, axis=0) / N
    dm = mean - mean_r
    m2_r = tl.sum(m2 + seen * dm * dm, axis=0)
    rstd = tl.rsqrt(m2_r / N + eps)
    for k in tl.static_range((N + CHUNK - 1) // CHUNK):
        offs = k * CHUNK + cols
        mask = offs < N
        x = tl.load(x_row + offs, mask=mask, other=0.0, eviction_policy="evict_first").to(tl.float32)
        w = tl.load(w_ptr + offs, mask=mask, other=0.0, eviction_policy="evict_last").to(tl.float32)
        b = tl.load(b_ptr + offs, mask=mask, other=0.0, eviction_policy="evict_last").to(tl.float32)
        y = (x - mean_r) * rstd * w + b
        tl.store(y_row + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _layernorm_looped_kernel(
    x_ptr, w_ptr, b_ptr, y_ptr, n_rows, n_cols, stride_x, stride_y, eps,
    BLOCK: tl.constexpr,
):
    cols = tl.arange(0, BLOCK)
    for row in range(tl.program_id(0), n_rows, tl.num_programs(0)):
        x_row = x_ptr + tl.cast(row, tl.int64) * stride_x
        y_row = y_ptr + tl.cast(row, tl.int64) * stride_y
        # pass 1: Chan's merge of per-block (count, mean, M2)
        count = 0.0
        mean = 0.0
        m2 = 0.0
        for start in range(0, n_cols, BLOCK):
            mask = start + cols < n_cols
            x = tl.load(x_row + start + cols, mask=mask, other=0.0).to(tl.float32)
            n_b = tl.sum(mask.to(tl.float32), axis=0)
            mean_b = tl.sum(x, axis=0) / n_b
            d = tl.where(mask, x - mean_b, 0.0)
            m2_b = tl.sum(d * d, axis=0)
            total = count + n_b
            delta = mean_b - mean
            mean = mean + delta * (n_b / total)
            m2 = m2 + m2_b + delta * delta * (count * n_b / total)
            count = total
        rstd = tl.rsqrt(m2 / n_cols + eps)
        # pass 2: newest blocks first, while they are still in L2
        last = tl.cdiv(n_cols, BLOCK) - 1
        for i in range(last + 1):
            start = (last - i) * BLOCK
            mask = start + cols < n_cols
            x = tl.load(x_row + start + cols, mask=mask, other=0.0).to(tl.float32)
            w = tl.load(w_ptr + start + cols, mask=mask, other=0.0).to(tl.float32)
            b = tl.load(b_ptr + start + cols, mask=mask, other=0.0).to(tl.float32)
            y = (x - mean) * rstd * w + b
            tl.store(y_row + start + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _layernorm_split_stats_kernel(
    x_ptr, part_ptr, n_cols, stride_x,
    SPLIT: tl.constexpr, CHUNK: tl.constexpr, BLOCK: tl.constexpr,
):
    """Split path, pass 1: chunk (program_id % SPLIT) of row (program_id // SPLIT), CHUNK a multiple of BLOCK:
    per-lane Welford (mean, centred squares) over the chunk's whole blocks, every lane at the same count (one
    reciprocal a step, no division a value), then the partial last block, merged into the chunk's mean and
    centred squares."""
    row = tl.program_id(0) // SPLIT
    start = (tl.program_id(0) % SPLIT) * CHUNK
    x_chunk = x_ptr + tl.cast(row, tl.int64) * stride_x + start
    width = tl.minimum(n_cols - start, CHUNK)
    n_full = width // BLOCK
    cols = tl.arange(0, BLOCK)
    mean_l = tl.zeros([BLOCK], tl.float32)
    m2_l = tl.zeros([BLOCK], tl.float32)
    for i in range(n_full):
        x = tl.load(x_chunk + i * BLOCK + cols).to(tl.float32)
        d = x - mean_l
        mean_l += d * (1.0 / (i + 1))
        m2_l += d * (x - mean_l)
    tail = cols < width - n_full * BLOCK
    x = tl.load(x_chunk + n_full * BLOCK + cols, mask=tail, other=0.0).to(tl.float32)
    d = x - mean_l
    mean_t = mean_l + d * (1.0 / (n_full + 1))
    m2_l = tl.where(tail, m2_l + d * (x - mean_t), m2_l)
    mean_l = tl.where(tail, mean_t, mean_l)
    n_l = n_full + tail.to(tl.float32)
    mean = tl.sum(n_l * mean_l, axis=0) / width
    m2 = tl.sum(m2_l + n_l * (mean_l - mean) * (mean_l - mean), axis=0)
    tl.store(part_ptr + tl.program_id(0) * 2, mean)
    tl.store(part_ptr + tl.program_id(0) * 2 + 1, m2)


@triton.jit
def _layernorm_split_merge_kernel(
    part_ptr, stats_ptr, n_cols, eps,
    SPLIT: tl.constexpr, SPLIT_P2: tl.constexpr, CHUNK: tl.constexpr,
):
    """Split path, pass 2: a row's (mean, rstd) from its chunks' (mean, centred squares), Chan's merge."""
    row = tl.program_id(0)
    parts = tl.arange(0, SPLIT_P2)
    live = parts < SPLIT
    means = tl.load(part_ptr + (row * SPLIT + parts) * 2, mask=live, other=0.0)
    m2s = tl.load(part_ptr + (row * SPLIT + parts) * 2 + 1, mask=live, other=0.0)
    counts = tl.where(live, tl.minimum(tl.maximum(n_cols - parts * CHUNK, 0), CHUNK), 0).to(tl.float32)
    mean = tl.sum(counts * means, axis=0) / n_cols
    m2 = tl.sum(m2s + counts * (means - mean) * (means - mean), axis=0)
    tl.store(stats_ptr + row * 2, mean)
    tl.store(stats_ptr + row * 2 + 1, tl.rsqrt(m2 / n_cols + eps))


@triton.jit
def _layernorm_split_apply_kernel(
    x_ptr, w_ptr, b_ptr, y_ptr, stats_ptr, n_rows, n_cols, stride_x, stride_y,
    BLOCK: tl.constexpr,
):
    """Split path, pass 3: a program owns BLOCK columns of every row, so w and b are read once in all (a
    program a chunk of a row would read them once a row: 16 x 32 MiB at KernelBench's 1/40)."""
    cols = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < n_cols
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    for r in range(n_rows):
        row = n_rows - 1 - r  # last rows first, meant to meet the statistics pass's last reads in L2; Nsight
        #                       Compute counts x read twice in full all the same (layernorm NOTES.md)
        mean = tl.load(stats_ptr + row * 2)
        rstd = tl.load(stats_ptr + row * 2 + 1)
        x = tl.load(x_ptr + tl.cast(row, tl.int64) * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
        y = (x - mean) * rstd * w + b
        tl.store(y_ptr + tl.cast(row, tl.int64) * stride_y + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


def _layernorm_split(x2, w, b, y, eps: float, t: dict) -> None:
    """Few wide rows (KernelBench's 16 rows of 4194304): each row's statistics from chunks a program each,
    merged a row a program, then y by programs that each own a block of columns of every row (two reads of x,
    one write of y, one read of w and b)."""
    n_rows, n_cols = x2.shape
    block = t["BLOCK_LOOP"]
    split = max(1, min(triton.cdiv(n_cols, block), triton.next_power_of_2(
        triton.cdiv(_num_sms(x2.device) * t["SPLIT_PROGRAMS_PER_SM"], n_rows))))
    chunk = triton.cdiv(triton.cdiv(n_cols, split), block) * block  # whole blocks; only a row's last is partial
    split = triton.cdiv(n_cols, chunk)  # no chunk left empty
    part = torch.empty((n_rows * split * 2,), dtype=torch.float32, device=x2.device)
    stats = torch.empty((n_rows * 2,), dtype=torch.float32, device=x2.device)
    _layernorm_split_stats_kernel[(n_rows * split,)](x2, part, n_cols, x2.stride(0), SPLIT=split, CHUNK=chunk,
                                                      BLOCK=block, num_warps=t["num_warps_split"])
    _layernorm_split_merge_kernel[(n_rows,)](part, stats, n_cols, eps, SPLIT=split,
                                              SPLIT_P2=triton.next_power_of_2(split), CHUNK=chunk, num_warps=4)
    apply_block = t["APPLY_BLOCK"]
    _layernorm_split_apply_kernel[(triton.cdiv(n_cols, apply_block),)](
        x2, w, b, y, stats, n_rows, n_cols, x2.stride(0), y.stride(0), BLOCK=apply_block,
        num_warps=t["num_warps_apply"])


def _fused_warps(rows: int, n_cols: int, element_size: int, bytes_per_warp: int) -> int:
    """Warps for a program holding `rows` rows: one per bytes_per_warp of real data (not of the padded
    power-of-two tile), a power of two in [2, 32]. On the H200 a 5120-wide bf16 row runs best with 8 warps,
    4096 fp32 with 16 and 8192 fp32 with 32 (benchmarks/results/sweep-20261130T131458Z.json
    in commit 8bfc09a7e)."""
    want = max(1, rows * n_cols * element_size // bytes_per_warp)
    return max(2, min(32, 1 << (want.bit_length() - 1)))


def _pair_warps(rows: int, n_cols: int, bytes_per_warp: int) -> int:
    """Warps for the pairs path: the next power of two of the rows' bf16 bytes / bytes_per_warp, in [1, 16].
    Fewer warps than the fused path: each thread holds more words, and more programs share an SM."""
    want = triton.cdiv(rows * n_cols * 2, bytes_per_warp)
    return min(16, triton.next_power_of_2(want))


def _pair_words(x2: torch.Tensor, w: torch.Tensor, b: torch.Tensor):
    """x2, w, b viewed as 32-bit words of two bf16 values, or None where the pairs path does not apply."""
    tensors = (x2, w, b)
    if any(t.dtype != torch.bfloat16 for t in tensors) or x2.shape[1] % 2 or x2.stride(0) % 2:
        return None
    if any(t.storage_offset() % 2 or t.data_ptr() % 4 for t in tensors):
        return None
    return tuple(t.view(torch.int32) for t in tensors)


def layer_norm_rows(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, eps: float) -> torch.Tensor:
    """Layer norm over x's trailing dims of weight's shape (nn.LayerNorm((C, H, W)): rows of C * H * W)."""
    n_cols = weight.numel()
    if tuple(x.shape[x.dim() - weight.dim():]) != tuple(weight.shape) or bias.numel() != n_cols:
        raise ValueError(f"layer norm of x {tuple(x.shape)} got weight {tuple(weight.shape)}, "
                         f"bias {tuple(bias.shape)}: they must be x's trailing dims")
    shape = x.shape
    x2 = x.reshape(-1, n_cols)
    if x2.stride(-1) != 1:
        x2 = x2.contiguous()
    n_rows = x2.shape[0]
    y = torch.empty((n_rows, n_cols), dtype=x.dtype, device=x.device)
    w, b = weight.contiguous(), bias.contiguous()
    t = TUNABLES
    words = _pair_words(x2, w, b) if t["PAIRS"] else None
    if n_cols <= t["MAX_FUSED_N"]:
        block = triton.next_power_of_2(n_cols)
        rows = t["ROWS_FUSED"] or max(1, min(2048 // block, triton.next_power_of_2(n_rows)))  # narrow rows
        grid = (triton.cdiv(n_rows, rows),)
        if words is not None:
            xw, ww, bw = words
            yw = y.view(torch.int32)
            _layernorm_pairs_kernel[grid](
                xw, ww, bw, yw, n_rows, xw.stride(0), yw.stride(0), eps,
                N=n_cols, ROWS=rows, BLOCK_P=max(1, block // 2), ASM=x.is_cuda,
                num_warps=t["PAIR_WARPS"] or _pair_warps(rows, n_cols, t["PAIR_ROW_BYTES_PER_WARP"]),
            )
        elif t["RELOAD"] and n_cols >= t["RELOAD_MIN_N"]:
            _layernorm_reload_kernel[(n_rows,)](
                x2, w, b, y, x2.stride(0), y.stride(0), eps,
                N=n_cols, CHUNK=min(t["RELOAD_CHUNK"], block), num_warps=t["num_warps_reload"],
            )
        else:
            warps = t["num_warps_fused"] or _fused_warps(rows, n_cols, x2.element_size(), t["ROW_BYTES_PER_WARP"])
            _layernorm_fused_kernel[grid](
                x2, w, b, y, n_rows, n_cols, x2.stride(0), y.stride(0), eps,
                ROWS=rows, BLOCK=block, N_CONST=n_cols if t["COLS_CONSTEXPR"] else 0, num_warps=warps,
            )
    elif n_rows < _num_sms(x.device) * t["SPLIT_BELOW_ROWS_PER_SM"]:
        _layernorm_split(x2, w, b, y, eps, t)
    else:
        grid = (min(n_rows, _num_sms(x.device) * t["PROGRAMS_PER_SM"]),)
        _layernorm_looped_kernel[grid](
            x2, w, b, y, n_rows, n_cols, x2.stride(0), y.stride(0), eps,
            BLOCK=t["BLOCK_LOOP"], num_warps=t["num_warps_loop"],
        )
    return y.reshape(shape)


class ModelNew(nn.Module):
    """Same parameters (created in the same order) as the family's specs: weight, bias of shape (N,)."""

    def __init__(self, normalized_shape: int, eps: float = 1e-5):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(normalized_shape))
        self.bias = nn.Parameter(torch.randn(normalized_shape))
        self.eps = eps

    def forward(self, x):
        return layer_norm_rows(x, self.weight, self.bias, self.eps)
