"""Batch norm in training mode over (N, C, *spatial): batch statistics per channel, affine, and the
running-statistics update that nn.BatchNorm2d makes in training (momentum, unbiased variance).

Two kernels, because every channel's statistics need all of its N * HW elements before any output:
- _batchnorm_stats_kernel, grid C * SPLIT: program (c, s) reads planes n = s, s + SPLIT, ... of
  channel c and writes its (count, mean, M2) (Chan's merge over blocks: no sum-of-squares cancellation).
- _batchnorm_apply_kernel, grid C * N * blocks: merges the SPLIT partials of its channel (a few
  hundred bytes, L2-resident), writes y = (x - mean) * rstd * w + b; the first program of a channel
  also updates running_mean / running_var (and channel 0's, num_batches_tracked).
STRATEGY "coop" instead makes one kernel that reads x once: SPLIT = cdiv(N * HW, COOP_CHUNK) programs
share a channel, each holding a chunk of its N * HW values in registers; each publishes its chunk's
(count, mean, M2), bumps the channel's counter and polls until all SPLIT are in, merges them and writes
its chunk from registers (part 0 updates the running statistics). The persistent grid is a multiple of
SPLIT so a channel's programs share a round; a program that polls max_spin times without seeing its
peers (not resident, or the interpreter running programs one by one) reads the whole channel itself.
A chunk is ROWS x RUN: runs of RUN contiguous values that never cross a plane (16-byte accesses), the
channel's planes one after another. Launch: at most 64 warps per SM, and maxnreg keeps the programs per SM
really resident. COOP_PREFETCH issues the next chunk's load before polling (1) or before reducing (2), so
DRAM is busy while a program waits; COOP_SYNC "tagged" publishes each chunk's (mean, M2) as one 64-bit word
that doubles as its ready flag (no counter, no release fence waiting on the previous chunk's y stores).
COOP_SYNC "last" polls one word per channel instead of all peers (polling traffic O(SPLIT), not O(SPLIT^2)):
each program stores its partial and bumps the channel's counter (acq_rel); the one that sees SPLIT - 1
merges the SPLIT partials, updates the running statistics and publishes (mean, rstd) as one 64-bit word
(its own ready flag, so no release fence); the others poll only that word.
STRATEGY "two_kernel": bytes moved: x is read twice and y written once (1.5x the minimum) once the tensor is larger than L2.
The stats kernel walks channels from last to first and the apply kernel from first to last, so the
channels read last by the first kernel are still in L2 when the second starts.
"""

import torch
import triton
import triton.language as tl
from torch import nn

TUNABLES = {
    "SPLIT": 64,  # programs per channel in the stats kernel
    "BLOCK_STATS": 4096,
    "num_warps_stats": 8,
    "MAX_BLOCK_APPLY": 4096,  # apply kernel: elements of one plane per program
    "num_warps_apply": 8,
    "STRATEGY": "two_kernel",  # "two_kernel" (stats, then apply: x read twice) or "coop" (x read once)
    "COOP_CHUNK": 16384,  # coop: values of a channel per program, held in registers (power of 2)
    "num_warps_coop": 16,
    "COOP_PROGRAMS_PER_SM": 1,  # coop: persistent programs per SM (all must be resident to not poll out)
    "COOP_PREFETCH": 0,  # coop: load the next chunk 0 = when its turn comes, 1 = while polling for the
    #                      current one's peers, 2 = before reducing the current one (DRAM stays busy)
    "COOP_SYNC": "counter",  # coop: "counter" (partials, then a per-channel counter polled), "tagged"
    #                          (each chunk's (mean, M2) in one 64-bit word that is its own ready flag) or
    #                          "last" (the last arriver merges; the others poll one (mean, rstd) word)
    "EVICT_APPLY": False,  # two_kernel: evict_first on the apply kernel's x loads and y stores, so y does not
    #                        push out the channels the stats kernel left in L2
    "EVICT_STATS": False,  # two_kernel: evict_last on the stats kernel's loads (its last channels stay in L2)
}
_MAX_SPIN_GPU = 50_000  # coop: polls (~1 us each) before a program computes its channel's stats itself


@triton.jit
def _batchnorm_stats_kernel(
    x_ptr, cnt_ptr, mean_ptr, m2_ptr, n_batch, n_channels, hw,
    SPLIT: tl.constexpr, BLOCK: tl.constexpr, EVICT: tl.constexpr,
):
    pid = tl.program_id(0)
    c = n_channels - 1 - pid // SPLIT  # last channel first (see the module docstring)
    s = pid % SPLIT
    offs = tl.arange(0, BLOCK)
    count = 0.0
    mean = 0.0
    m2 = 0.0
    for n in range(s, n_batch, SPLIT):
        plane = x_ptr + (tl.cast(n, tl.int64) * n_channels + c) * hw
        for start in range(0, hw, BLOCK):
            mask = start + offs < hw
            x = tl.load(plane + start + offs, mask=mask, other=0.0, eviction_policy=EVICT).to(tl.float32)
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
    SPLIT: tl.constexpr, BLOCK: tl.constexpr, UPDATE_RUNNING: tl.constexpr, EVICT: tl.constexpr,
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
    x = tl.load(x_ptr + base + offs, mask=mask, other=0.0, eviction_policy=EVICT).to(tl.float32)
    tl.store(y_ptr + base + offs, (x * scale + shift).to(y_ptr.dtype.element_ty), mask=mask, eviction_policy=EVICT)
    if UPDATE_RUNNING:  # noqa: SIM102 - a constexpr branch around a runtime one
        if rem == 0:
            rm = tl.load(run_mean_ptr + c).to(tl.float32)
            rv = tl.load(run_var_ptr + c).to(tl.float32)
            unbiased = m2 / tl.maximum(count - 1.0, 1.0)
            tl.store(run_mean_ptr + c, ((1.0 - momentum) * rm + momentum * mean).to(run_mean_ptr.dtype.element_ty))
            tl.store(run_var_ptr + c, ((1.0 - momentum) * rv + momentum * unbiased).to(run_var_ptr.dtype.element_ty))
            if c == 0:
                tl.store(batches_ptr, tl.load(batches_ptr) + 1)  # num_batches_tracked


@triton.jit
def _channel_stats(x_ptr, c, n_batch, n_channels, hw, BLOCK: tl.constexpr):
    """(count, mean, M2) of channel c over all N planes, Chan-merged per block."""
    offs = tl.arange(0, BLOCK)
    count = 0.0
    mean = 0.0
    m2 = 0.0
    for n in range(n_batch):
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
    return count, mean, m2


@triton.jit
def _coop_chunk(task, SPLIT: tl.constexpr, n_batch, n_channels, hw, runs, ROWS: tl.constexpr, RUN: tl.constexpr):
    """Offsets and mask of chunk `task` (all off past the last task): ROWS runs of RUN contiguous values of
    channel task // SPLIT.

    A plane of HW values is `runs` = cdiv(HW, RUN) runs; the channel's N planes are N * runs runs in a row.
    A run never crosses a plane, so each row of the tile is one contiguous (16-byte vectorised) access.
    """
    c = task // SPLIT
    r = (task % SPLIT) * ROWS + tl.arange(0, ROWS)
    n = r // runs
    cols = ((r - n * runs) * RUN)[:, None] + tl.arange(0, RUN)[None, :]
    mask = (r < tl.where(task < SPLIT * n_channels, n_batch * runs, 0))[:, None] & (cols < hw)
    offs = (n.to(tl.int64) * n_channels + c)[:, None] * hw + cols
    return offs, mask


@triton.jit
def _coop_load(x_ptr, task, SPLIT: tl.constexpr, n_batch, n_channels, hw, runs, ROWS: tl.constexpr,
               RUN: tl.constexpr):
    """Chunk `task` in x's dtype (zeros past the last task: a program's prefetch after its last one)."""
    offs, mask = _coop_chunk(task, SPLIT, n_batch, n_channels, hw, runs, ROWS, RUN)
    return tl.load(x_ptr + offs, mask=mask, other=0.0)


@triton.jit
def _chunk_counts(parts, rows_per_unit, runs, last_run, ROWS: tl.constexpr, RUN: tl.constexpr):
    """Values in chunks `parts` of a unit (channel): ROWS runs each, a plane's last run only last_run long."""
    first = parts * ROWS
    end = tl.minimum(first + ROWS, rows_per_unit)
    n_rows = tl.maximum(end - first, 0)
    plane_ends = tl.where(n_rows > 0, end // runs - first // runs, 0)  # rows r with r % runs == runs - 1
    return (n_rows * RUN - plane_ends * (RUN - last_run)).to(tl.float32)


@triton.jit
def _publish_tagged(slot_ptr, mean_c, m2_c):
    """(mean, M2) (or (mean, rstd)) as one 64-bit word (the high float's sign bit clear): a reader sees all
    of it or the -1 fill, so no counter and no release fence (which would first wait for this program's
    outstanding y stores)."""
    lo = mean_c.to(tl.int32, bitcast=True).to(tl.int64) & 0xFFFFFFFF
    hi = (m2_c.to(tl.int32, bitcast=True) & 0x7FFFFFFF).to(tl.int64)
    tl.atomic_xchg(slot_ptr, (hi << 32) | lo, sem="relaxed")


@triton.jit
def _wait_tagged(slots_ptr, parts, max_spin, SPLIT: tl.constexpr):
    """The unit's SPLIT (mean, M2) words, polled until all are published or max_spin polls; and whether all were."""
    pmask = parts < SPLIT
    words = tl.load(slots_ptr + parts, mask=pmask, other=0, volatile=True)
    spins = 0
    while (tl.min(words, axis=0) < 0) & (spins < max_spin):
        words = tl.load(slots_ptr + parts, mask=pmask, other=0, volatile=True)
        spins += 1
    p_mean = (words & 0xFFFFFFFF).to(tl.int32).to(tl.float32, bitcast=True)
    p_m2 = (words >> 32).to(tl.int32).to(tl.float32, bitcast=True)
    return tl.min(words, axis=0) >= 0, p_mean, p_m2


@triton.jit
def _wait_word(word_ptr, max_spin):
    """Polls one 64-bit (low, high) float word until published (>= 0) or max_spin polls; (published, low, high)."""
    word = tl.load(word_ptr, volatile=True)
    spins = 0
    while (word < 0) & (spins < max_spin):
        word = tl.load(word_ptr, volatile=True)
        spins += 1
    low = (word & 0xFFFFFFFF).to(tl.int32).to(tl.float32, bitcast=True)
    high = (word >> 32).to(tl.int32).to(tl.float32, bitcast=True)
    return word >= 0, low, high


@triton.jit
def _wait_counted(part_ptr, count_ptr, done, slots, n_tasks, max_spin, SPLIT: tl.constexpr, SPLIT_P2: tl.constexpr):
    """Polls the unit's counter until SPLIT chunks are in (or max_spin polls); their (count, mean, M2) rows."""
    spins = tl.full([], 0, tl.int32)
    while (done < SPLIT) & (spins < max_spin):
        # acquire only: no fence, so a poll does not wait for the prefetch; the warp just stalls on L2
        done = tl.atomic_add(count_ptr, 0, sem="acquire")
        spins += 1
    p_n, p_mean, p_m2 = _load_partials(part_ptr, slots, n_tasks, SPLIT, SPLIT_P2)
    return done >= SPLIT, p_n, p_mean, p_m2


@triton.jit
def _load_partials(part_ptr, slots, n_tasks, SPLIT: tl.constexpr, SPLIT_P2: tl.constexpr):
    """The unit's SPLIT (count, mean, M2) rows (volatile: written by other SMs during this launch)."""
    pmask = tl.arange(0, SPLIT_P2) < SPLIT
    p_n = tl.load(part_ptr + slots, mask=pmask, other=0.0, volatile=True)
    p_mean = tl.load(part_ptr + n_tasks + slots, mask=pmask, other=0.0, volatile=True)
    p_m2 = tl.load(part_ptr + 2 * n_tasks + slots, mask=pmask, other=0.0, volatile=True)
    return p_n, p_mean, p_m2


@triton.jit
def _merge(p_n, p_mean, p_m2):
    """Chan's merge of partial (count, mean, M2)s: no sum-of-squares cancellation."""
    count = tl.sum(p_n, axis=0)
    mean = tl.sum(p_n * p_mean, axis=0) / count
    dm = p_mean - mean
    return count, mean, tl.sum(p_m2 + p_n * dm * dm, axis=0)


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


@triton.jit
def _batchnorm_coop_kernel(
    x_ptr, w_ptr, b_ptr, y_ptr, part_ptr, count_ptr, word_ptr, run_mean_ptr, run_var_ptr, batches_ptr,
    n_batch, n_channels, hw, runs, eps, momentum, max_spin,
    SPLIT: tl.constexpr, SPLIT_P2: tl.constexpr, ROWS: tl.constexpr, RUN: tl.constexpr,
    PREFETCH: tl.constexpr, SYNC: tl.constexpr, UPDATE_RUNNING: tl.constexpr,
):
    n_tasks = n_channels * SPLIT
    step = tl.num_programs(0)
    parts = tl.arange(0, SPLIT_P2)
    if PREFETCH > 0:
        x_next = _coop_load(x_ptr, tl.program_id(0), SPLIT, n_batch, n_channels, hw, runs, ROWS, RUN)
    for task in range(tl.program_id(0), n_tasks, step):
        c = task // SPLIT
        if PREFETCH > 0:
            x_raw = x_next
        else:
            x_raw = _coop_load(x_ptr, task, SPLIT, n_batch, n_channels, hw, runs, ROWS, RUN)
        if PREFETCH == 2:  # the next chunk's load goes out before this one is even reduced
            x_next = _coop_load(x_ptr, task + step, SPLIT, n_batch, n_channels, hw, runs, ROWS, RUN)
        _, mask = _coop_chunk(task, SPLIT, n_batch, n_channels, hw, runs, ROWS, RUN)
        x = x_raw.to(tl.float32)
        n_c = tl.sum(tl.sum(mask.to(tl.float32), axis=1), axis=0)
        mean_c = tl.sum(tl.sum(x, axis=1), axis=0) / tl.maximum(n_c, 1.0)
        d = tl.where(mask, x - mean_c, 0.0)
        m2_c = tl.sum(tl.sum(d * d, axis=1), axis=0)
        # publish this chunk's statistics; wait for the channel's other chunks
        if SYNC == "tagged":
            _publish_tagged(part_ptr + task, mean_c, m2_c)
        else:
            tl.store(part_ptr + task, n_c)
            tl.store(part_ptr + n_tasks + task, mean_c)
            tl.store(part_ptr + 2 * n_tasks + task, m2_c)
            tl.debug_barrier()
            done = tl.atomic_add(count_ptr + c, 1, sem="acq_rel") + 1  # the partial is visible before the count
        if PREFETCH == 1:  # the next chunk's load is in flight while this program polls (x is read-only)
            x_next = _coop_load(x_ptr, task + step, SPLIT, n_batch, n_channels, hw, runs, ROWS, RUN)
        if SYNC == "last":
            if done == SPLIT:  # the last arriver: every partial is in (its acq_rel add saw all the others')
                p_n, p_mean, p_m2 = _load_partials(part_ptr, c * SPLIT + parts, n_tasks, SPLIT, SPLIT_P2)
                count, mean, m2 = _merge(p_n, p_mean, p_m2)
                rstd = tl.rsqrt(m2 / count + eps)
                _publish_tagged(word_ptr + c, mean, rstd)  # rstd > 0: the sign-bit clear is a no-op
                if UPDATE_RUNNING:
                    _update_running(run_mean_ptr, run_var_ptr, batches_ptr, c, count, mean, m2, momentum)
            else:
                ready, mean, rstd = _wait_word(word_ptr + c, max_spin)
                if not ready:  # the last arriver is not running yet: read the whole channel (never a hang)
                    count, mean, m2 = _channel_stats(x_ptr, c, n_batch, n_channels, hw, 1024)
                    rstd = tl.rsqrt(m2 / count + eps)
        else:
            if SYNC == "tagged":
                ready, p_mean, p_m2 = _wait_tagged(part_ptr + c * SPLIT, parts, max_spin, SPLIT)
                p_n = _chunk_counts(parts, n_batch * runs, runs, hw - (runs - 1) * RUN, ROWS, RUN)
            else:
                ready, p_n, p_mean, p_m2 = _wait_counted(part_ptr, count_ptr + c, done, c * SPLIT + parts, n_tasks,
                                                         max_spin, SPLIT, SPLIT_P2)
            if ready:
                count, mean, m2 = _merge(p_n, p_mean, p_m2)
            else:  # a peer is not running: read the whole channel (correct, slower; never a hang)
                count, mean, m2 = _channel_stats(x_ptr, c, n_batch, n_channels, hw, 1024)
            rstd = tl.rsqrt(m2 / count + eps)
            if UPDATE_RUNNING:  # noqa: SIM102 - a constexpr branch around a runtime one
                if task % SPLIT == 0:
                    _update_running(run_mean_ptr, run_var_ptr, batches_ptr, c, count, mean, m2, momentum)
        scale = rstd * tl.load(w_ptr + c).to(tl.float32)
        shift = tl.load(b_ptr + c).to(tl.float32) - mean * scale
        offs, mask = _coop_chunk(task, SPLIT, n_batch, n_channels, hw, runs, ROWS, RUN)
        tl.store(y_ptr + offs, (x * scale + shift).to(y_ptr.dtype.element_ty), mask=mask)


def _num_sms(device: torch.device) -> int:
    if device.type == "cuda":
        return torch.cuda.get_device_properties(device).multi_processor_count
    return 4  # the CPU interpreter: a small grid


def _run_length(hw: int, chunk: int) -> int:
    """Contiguous values per tile row: the power of 2 (at least 64 where the chunk allows) that wastes the
    fewest masked lanes when a plane is cut into runs, the longer on a tie (3136 = 49 x 64 -> 64)."""
    top = min(chunk, triton.next_power_of_2(hw))
    candidates = [top >> k for k in range(top.bit_length()) if top >> k >= min(64, top)]
    return min(candidates, key=lambda run: (triton.cdiv(hw, run) * run, -run))


def _coop_launch(n_tasks_per_unit: int, n_units: int, num_warps: int, programs_per_sm: int, device) -> tuple:
    """(grid, maxnreg) of a persistent coop launch whose rounds are whole units (channels) and co-resident.

    At most 64 warps and 32 programs per SM; maxnreg caps registers so that many programs really fit
    (64K registers per SM), so all programs of a round run at once (a peer that never starts would make
    the others poll out). Rounds are evened out so the last one is not a sliver.
    """
    per_sm = max(1, min(programs_per_sm, 64 // num_warps, 32))
    per_round = max(1, _num_sms(device) * per_sm // n_tasks_per_unit)
    rounds = triton.cdiv(n_units, per_round)
    grid = (triton.cdiv(n_units, rounds) * n_tasks_per_unit,)
    regs = 65536 // (per_sm * num_warps * 32)
    return grid, (255 if regs > 255 else regs // 8 * 8)


def _batch_norm_coop(x, weight, bias, running_mean, running_var, num_batches_tracked, momentum, eps):
    n, c = x.shape[0], x.shape[1]
    hw = x.numel() // (n * c)
    t = TUNABLES
    chunk = min(t["COOP_CHUNK"], triton.next_power_of_2(n * hw))
    run = _run_length(hw, chunk)
    runs = triton.cdiv(hw, run)
    rows = chunk // run
    split = triton.cdiv(n * runs, rows)
    grid, maxnreg = _coop_launch(split, c, t["num_warps_coop"], t["COOP_PROGRAMS_PER_SM"], x.device)
    sync = t["COOP_SYNC"]
    if sync not in ("counter", "tagged", "last"):
        raise ValueError(f"batchnorm: TUNABLES['COOP_SYNC'] = {sync!r}, expected 'counter', 'tagged' or 'last'")
    if sync == "tagged":  # one (mean, M2) word per chunk, -1 until published
        part = torch.full((c * split,), -1, dtype=torch.int64, device=x.device)
    else:  # counts, means, M2s
        part = torch.empty((3 * c * split,), dtype=torch.float32, device=x.device)
    count = part if sync == "tagged" else torch.zeros((c,), dtype=torch.int32, device=x.device)  # tagged: no counter
    # last: one (mean, rstd) word per channel, -1 until its last arriver publishes it
    word = torch.full((c,), -1, dtype=torch.int64, device=x.device) if sync == "last" else part
    y = torch.empty_like(x)
    update = running_mean is not None and running_var is not None
    _batchnorm_coop_kernel[grid](
        x, weight, bias, y, part, count, word,
        running_mean if update else part, running_var if update else part,
        num_batches_tracked if update else part,
        n, c, hw, runs, eps, momentum, _MAX_SPIN_GPU if x.is_cuda else 0,
        SPLIT=split, SPLIT_P2=triton.next_power_of_2(split), ROWS=rows, RUN=run,
        PREFETCH=t["COOP_PREFETCH"], SYNC=sync, UPDATE_RUNNING=update, num_warps=t["num_warps_coop"], maxnreg=maxnreg,
    )
    return y


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
    if t["STRATEGY"] == "coop":
        return _batch_norm_coop(x, weight, bias, running_mean, running_var, num_batches_tracked, momentum, eps)
    if t["STRATEGY"] != "two_kernel":
        raise ValueError(f"batchnorm: TUNABLES['STRATEGY'] = {t['STRATEGY']!r}, expected 'coop' or 'two_kernel'")
    split = t["SPLIT"]
    parts = torch.empty((3, c * split), dtype=torch.float32, device=x.device)
    _batchnorm_stats_kernel[(c * split,)](
        x, parts[0], parts[1], parts[2], n, c, hw,
        SPLIT=split, BLOCK=t["BLOCK_STATS"], EVICT="evict_last" if t["EVICT_STATS"] else "",
        num_warps=t["num_warps_stats"],
    )
    y = torch.empty_like(x)
    block = min(triton.next_power_of_2(hw), t["MAX_BLOCK_APPLY"])
    blocks_per_plane = triton.cdiv(hw, block)
    update = running_mean is not None and running_var is not None
    _batchnorm_apply_kernel[(c * n * blocks_per_plane,)](
        x, weight, bias, y, parts[0], parts[1], parts[2],
        running_mean if update else parts, running_var if update else parts,
        num_batches_tracked if update else parts,
        n, c, hw, blocks_per_plane, eps, momentum,
        SPLIT=split, BLOCK=block, UPDATE_RUNNING=update, EVICT="evict_first" if t["EVICT_APPLY"] else "",
        num_warps=max(1, min(t["num_warps_apply"], block // 256)),
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
