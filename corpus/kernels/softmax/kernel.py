"""Row softmax and log-softmax over the last dimension, for rows of any width.

This file is the one source of the softmax kernels: corpus/kernels/log_softmax/kernel.py carries the
same code below its TUNABLES (a test keeps the two identical), because the harness evaluates a
kernel as source text from a temporary folder, so one library file cannot import another.

Three paths, chosen by the launcher from the row width N:
- fused (N <= MAX_FUSED_N): the row (or several narrow rows) sits in registers: one read, one write,
  max, exp and sum in fp32. Bytes moved: 2 * rows * N * element size, the minimum.
- WIDE_STRATEGY "coop" (wider rows, e.g. 65536 fp32 = 256 KiB, more than one program's registers or
  shared memory hold): SPLIT = cdiv(N, COOP_CHUNK) programs share a row, each holding its chunk in
  registers. Each writes its chunk's (max, sum of exp) to a workspace, bumps the row's counter and
  polls it until all SPLIT chunks are in, then merges the partials and writes its chunk from registers:
  one read and one write, the minimum. The grid is persistent with a multiple of SPLIT programs, so the
  programs of one row run in the same round; should a peer not be resident (or, in the interpreter,
  programs run one after another), a program stops polling after max_spin polls and reads the whole
  row itself, so it never waits forever.
- WIDE_STRATEGY "looped": a persistent grid of NUM_SMS * PROGRAMS_PER_SM programs walks rows; pass 1
  reads the row with an online (running max, rescaled sum) update per lane, pass 2 re-reads it from
  the end backwards (L2-warm when it hits) and writes. EVICT_LOOP adds L2 eviction hints (keep pass 1's
  reads, stream pass 2's reads and the writes). On the H200 (4096 x 65536 fp32) without hints the
  second read mostly misses L2: 63% of the copy rate counted as one read + one write.
"""

import torch
import triton
import triton.language as tl
from torch import nn

TUNABLES = {
    "MAX_FUSED_N": 16384,  # widest row kept whole in registers
    "ELEMS_PER_THREAD": 32,  # fused path: sets num_warps from the tile size
    "WIDE_STRATEGY": "looped",  # rows wider than MAX_FUSED_N: "looped" (two passes) or "coop" (split row)
    "BLOCK_LOOP": 16384,  # looped path: elements per step
    "num_warps_loop": 32,
    "PROGRAMS_PER_SM": 1,  # looped path: persistent programs per SM (rows in flight fit in L2)
    "EVICT_LOOP": True,  # looped path: L2 eviction hints
    "ONE_EXP": True,  # looped path, pass 1: one exp per element in the online update instead of two
    "COOP_CHUNK": 16384,  # coop path: elements of a row per program, held in registers (power of 2)
    "num_warps_coop": 16,
    "COOP_PROGRAMS_PER_SM": 2,  # coop path: persistent programs per SM (all must be resident to not poll out)
}
LOG_SOFTMAX = False  # the same kernels serve log_softmax (x - max - log(sum))

# ---- shared softmax code: corpus/kernels/{softmax,log_softmax}/kernel.py keep this part identical ----
_NEG = tl.constexpr(-3.0e38)  # finite stand-in for -inf on masked lanes: exp(_NEG - m) == 0 without inf - inf
_MAX_SPIN_GPU = 50_000  # coop path: polls (~1 us each) before a program computes its row's stats itself


@triton.jit
def _softmax_fused_kernel(
    x_ptr, y_ptr, n_rows, n_cols, stride_x, stride_y,
    ROWS: tl.constexpr, BLOCK: tl.constexpr, LOG: tl.constexpr,
):
    rows = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK)
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    x = tl.load(x_ptr + rows[:, None] * stride_x + cols[None, :], mask=mask, other=_NEG).to(tl.float32)
    m = tl.max(x, axis=1)
    z = x - m[:, None]
    e = tl.exp(z)
    s = tl.sum(e, axis=1)
    if LOG:
        y = z - tl.log(s)[:, None]
    else:
        y = e * (1.0 / s)[:, None]
    tl.store(y_ptr + rows[:, None] * stride_y + cols[None, :], y.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _row_online_stats(x_row, n_cols, BLOCK: tl.constexpr, EVICT: tl.constexpr, ONE_EXP: tl.constexpr):
    """(max, sum of exp(x - max)) of one row, read in BLOCK steps with a per-lane online update.

    ONE_EXP: of exp(m_old - m_new) and exp(x - m_new) one is exp(0) = 1, so one exp(-|x - m_old|) does.
    Lanes whose running max stays _NEG contribute exp(_NEG - m) = 0 to the final sum either way."""
    cols = tl.arange(0, BLOCK)
    m_lane = tl.full([BLOCK], _NEG, tl.float32)
    s_lane = tl.zeros([BLOCK], tl.float32)
    for start in range(0, n_cols, BLOCK):
        x = tl.load(x_row + start + cols, mask=start + cols < n_cols, other=_NEG, eviction_policy=EVICT)
        x = x.to(tl.float32)
        if ONE_EXP:
            d = x - m_lane
            e = tl.exp(-tl.abs(d))
            s_lane = tl.where(d > 0, s_lane * e + 1.0, s_lane + e)
            m_lane = tl.maximum(m_lane, x)
        else:
            m_new = tl.maximum(m_lane, x)
            s_lane = s_lane * tl.exp(m_lane - m_new) + tl.exp(x - m_new)
            m_lane = m_new
    m = tl.max(m_lane, axis=0)
    s = tl.sum(s_lane * tl.exp(m_lane - m), axis=0)
    return m, s


@triton.jit
def _softmax_looped_kernel(
    x_ptr, y_ptr, n_rows, n_cols, stride_x, stride_y,
    BLOCK: tl.constexpr, LOG: tl.constexpr, EVICT_KEEP: tl.constexpr, EVICT_STREAM: tl.constexpr,
    ONE_EXP: tl.constexpr,
):
    cols = tl.arange(0, BLOCK)
    for row in range(tl.program_id(0), n_rows, tl.num_programs(0)):
        x_row = x_ptr + tl.cast(row, tl.int64) * stride_x
        y_row = y_ptr + tl.cast(row, tl.int64) * stride_y
        m, s = _row_online_stats(x_row, n_cols, BLOCK, EVICT_KEEP, ONE_EXP)  # pass 1
        log_s = tl.log(s)
        inv_s = 1.0 / s
        # pass 2: newest blocks first, while they are still in L2
        last = tl.cdiv(n_cols, BLOCK) - 1
        for i in range(last + 1):
            start = (last - i) * BLOCK
            mask = start + cols < n_cols
            x = tl.load(x_row + start + cols, mask=mask, other=_NEG, eviction_policy=EVICT_STREAM)
            x = x.to(tl.float32)
            if LOG:
                y = x - m - log_s
            else:
                y = tl.exp(x - m) * inv_s
            tl.store(y_row + start + cols, y.to(y_ptr.dtype.element_ty), mask=mask, eviction_policy=EVICT_STREAM)


@triton.jit
def _softmax_coop_kernel(
    x_ptr, y_ptr, part_ptr, count_ptr, n_rows, n_cols, stride_x, stride_y, max_spin,
    SPLIT: tl.constexpr, SPLIT_P2: tl.constexpr, CHUNK: tl.constexpr, LOG: tl.constexpr,
):
    offs = tl.arange(0, CHUNK)
    parts = tl.arange(0, SPLIT_P2)
    for task in range(tl.program_id(0), n_rows * SPLIT, tl.num_programs(0)):
        row = task // SPLIT
        cols = (task % SPLIT) * CHUNK + offs
        mask = cols < n_cols
        x_row = x_ptr + tl.cast(row, tl.int64) * stride_x
        x = tl.load(x_row + cols, mask=mask, other=_NEG).to(tl.float32)
        m_c = tl.max(x, axis=0)
        s_c = tl.sum(tl.where(mask, tl.exp(x - m_c), 0.0), axis=0)
        # publish this chunk's partial, then wait for the row's other chunks
        tl.store(part_ptr + 2 * task, m_c)
        tl.store(part_ptr + 2 * task + 1, s_c)
        tl.debug_barrier()
        done = tl.atomic_add(count_ptr + row, 1) + 1  # acq_rel: the partial is visible before the count
        spins = tl.full([], 0, tl.int32)
        while (done < SPLIT) & (spins < max_spin):
            done = tl.atomic_add(count_ptr + row, 0)
            spins += 1
        if done >= SPLIT:
            pmask = parts < SPLIT
            p_m = tl.load(part_ptr + 2 * (row * SPLIT + parts), mask=pmask, other=_NEG, volatile=True)
            p_s = tl.load(part_ptr + 2 * (row * SPLIT + parts) + 1, mask=pmask, other=0.0, volatile=True)
            m = tl.max(p_m, axis=0)
            s = tl.sum(p_s * tl.exp(p_m - m), axis=0)
        else:  # a peer is not running: read the whole row (correct, slower; never a hang)
            m, s = _row_online_stats(x_row, n_cols, 1024, "", False)
        if LOG:
            y = x - m - tl.log(s)
        else:
            y = tl.exp(x - m) * (1.0 / s)
        y_row = y_ptr + tl.cast(row, tl.int64) * stride_y
        tl.store(y_row + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


def _num_sms(device: torch.device) -> int:
    if device.type == "cuda":
        return torch.cuda.get_device_properties(device).multi_processor_count
    return 4  # the CPU interpreter: a small grid


def softmax_rows(x: torch.Tensor, log: bool = LOG_SOFTMAX) -> torch.Tensor:
    if x.dim() < 1 or x.numel() == 0:
        raise ValueError(f"softmax input must be a non-empty tensor, got shape {tuple(x.shape)}")
    shape = x.shape
    x2 = x.reshape(-1, shape[-1])
    if x2.stride(-1) != 1:
        x2 = x2.contiguous()
    n_rows, n_cols = x2.shape
    y = torch.empty((n_rows, n_cols), dtype=x.dtype, device=x.device)
    t = TUNABLES
    if n_cols <= t["MAX_FUSED_N"]:
        block = triton.next_power_of_2(n_cols)
        rows = max(1, min(2048 // block, triton.next_power_of_2(n_rows)))  # narrow rows: several per program
        warps = max(2, min(16, rows * block // (32 * t["ELEMS_PER_THREAD"])))
        grid = (triton.cdiv(n_rows, rows),)
        _softmax_fused_kernel[grid](
            x2, y, n_rows, n_cols, x2.stride(0), y.stride(0),
            ROWS=rows, BLOCK=block, LOG=log, num_warps=warps,
        )
    elif t["WIDE_STRATEGY"] == "coop":
        chunk = min(t["COOP_CHUNK"], triton.next_power_of_2(n_cols))
        split = triton.cdiv(n_cols, chunk)
        per_round = max(1, _num_sms(x.device) * t["COOP_PROGRAMS_PER_SM"] // split)  # rows per round
        grid = (min(n_rows, per_round) * split,)  # a multiple of split: a row's programs share a round
        part = torch.empty((n_rows * split * 2,), dtype=torch.float32, device=x.device)
        count = torch.zeros((n_rows,), dtype=torch.int32, device=x.device)
        max_spin = _MAX_SPIN_GPU if x.is_cuda else 0  # the interpreter runs programs one after another
        _softmax_coop_kernel[grid](
            x2, y, part, count, n_rows, n_cols, x2.stride(0), y.stride(0), max_spin,
            SPLIT=split, SPLIT_P2=triton.next_power_of_2(split), CHUNK=chunk, LOG=log,
            num_warps=t["num_warps_coop"],
        )
    elif t["WIDE_STRATEGY"] == "looped":
        grid = (min(n_rows, _num_sms(x.device) * t["PROGRAMS_PER_SM"]),)
        keep, stream = ("evict_last", "evict_first") if t["EVICT_LOOP"] else ("", "")
        _softmax_looped_kernel[grid](
            x2, y, n_rows, n_cols, x2.stride(0), y.stride(0),
            BLOCK=t["BLOCK_LOOP"], LOG=log, EVICT_KEEP=keep, EVICT_STREAM=stream, ONE_EXP=t["ONE_EXP"],
            num_warps=t["num_warps_loop"],
        )
    else:
        raise ValueError(f"softmax: TUNABLES['WIDE_STRATEGY'] = {t['WIDE_STRATEGY']!r}, expected 'coop' or 'looped'")
    return y.reshape(shape)


def log_softmax_rows(x: torch.Tensor) -> torch.Tensor:
    return softmax_rows(x, log=True)
# ---- end of the shared softmax code ----


class ModelNew(nn.Module):
    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, x):
        return softmax_rows(x)
