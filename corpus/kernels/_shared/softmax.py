"""The kernels of the softmax and log_softmax families, over the last dimension, for rows of any width.

Shared by corpus/kernels/softmax and corpus/kernels/log_softmax (each family's kernel.py holds its TUNABLES
and its flag) and inlined into their candidate sources (ingest/bundle.py). Three paths, chosen by the row
width N and WIDE_STRATEGY ("auto": "looped" while the rows in flight, one a persistent program, fit in
LOOP_L2_BYTES, so that its second pass re-reads them from L2; "coop" for wider rows, a 393216-wide fp32 row
being 1.5 MiB):
- fused (N <= MAX_FUSED_N): the row (or several narrow rows) sits in registers: one read, one write, max,
  exp and sum in fp32. Bytes moved: 2 * rows * N * element size, the minimum.
- WIDE_STRATEGY "looped": a persistent grid of NUM_SMS * PROGRAMS_PER_SM programs walks rows; pass 1 reads
  the row with an online (running max, rescaled sum) update per lane (one exp per element), pass 2 re-reads
  it from the end backwards (L2-warm when it hits) and writes. EVICT_LOOP adds L2 eviction hints (True:
  keep pass 1's reads, stream pass 2's reads and the writes; "stream": pass 2 only).
- WIDE_STRATEGY "coop" (rows wider than one program's registers hold, e.g. a 50257-wide vocabulary):
  SPLIT = cdiv(N, COOP_CHUNK) programs share a row, each holding its chunk (an equal share of the row's
  16-byte-aligned body, so vector loads on any width; the < 16 bytes before and after the body go to the
  first and last chunk) in registers as [CHUNK // TILE, TILE]. Each folds its values into per-lane
  (max, sum of exp) through exp2, reduces them in one tree of (max, sum) pairs, publishes the pair as one
  64-bit word that is its own ready flag, loads its next chunk while it waits for the row's other words,
  merges them and writes its chunk from registers: one read and one write, the minimum. The persistent grid
  is a multiple of SPLIT, so the programs of a row share a round, and maxnreg keeps a round's programs
  co-resident; should a peer not be resident (or, in the interpreter, programs run one after another), a
  program stops polling after max_spin polls and reads the whole row itself, so it never waits forever.
"""

import torch
import triton
import triton.language as tl

from corpus.kernels._shared.coop import _MAX_SPIN_GPU, _coop_launch
from corpus.kernels._shared.device import _num_sms

_NEG = tl.constexpr(-3.0e38)  # finite stand-in for -inf on masked lanes: exp(_NEG - m) == 0 without inf - inf
_LOG2E = tl.constexpr(1.4426950408889634)
_LANE_FLOOR = tl.constexpr(-1.0e38)  # coop: lowest lane max (above _NEG; times log2(e), still finite)
_PAD_WORD = tl.constexpr(0xFF61B1E6)  # a tagged (max, sum) word reading (_NEG, 0.0): merge padding
# looped path: TUNABLES["EVICT_LOOP"] -> (pass 1 loads, pass 2 loads and stores) eviction policies
_EVICT_LOOP = {False: ("", ""), True: ("evict_last", "evict_first"), "stream": ("", "evict_first")}


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
def _online_update(m_lane, s_lane, x, ONE_EXP: tl.constexpr):
    """Fold x into per-lane (running max, sum of exp(x - max)).

    ONE_EXP: of exp(m_old - m_new) and exp(x - m_new) one is exp(0) = 1, so one exp(-|x - m_old|) does.
    Lanes whose running max stays _NEG contribute exp(_NEG - m) = 0 to the final sum either way."""
    if ONE_EXP:
        d = x - m_lane
        e = tl.exp(-tl.abs(d))
        s_lane = tl.where(d > 0, s_lane * e + 1.0, s_lane + e)
        m_lane = tl.maximum(m_lane, x)
    else:
        m_new = tl.maximum(m_lane, x)
        s_lane = s_lane * tl.exp(m_lane - m_new) + tl.exp(x - m_new)
        m_lane = m_new
    return m_lane, s_lane


@triton.jit
def _row_online_stats(x_row, n_cols, BLOCK: tl.constexpr, EVICT: tl.constexpr, ONE_EXP: tl.constexpr):
    """(max, sum of exp(x - max)) of one row, read in BLOCK steps with a per-lane online update."""
    cols = tl.arange(0, BLOCK)
    m_lane = tl.full([BLOCK], _NEG, tl.float32)
    s_lane = tl.zeros([BLOCK], tl.float32)
    for start in range(0, n_cols, BLOCK):
        x = tl.load(x_row + start + cols, mask=start + cols < n_cols, other=_NEG, eviction_policy=EVICT)
        m_lane, s_lane = _online_update(m_lane, s_lane, x.to(tl.float32), ONE_EXP)
    m = tl.max(m_lane, axis=0)
    s = tl.sum(s_lane * tl.exp(m_lane - m), axis=0)
    return m, s


@triton.jit
def _softmax_out(x, m, log_s, inv_s, LOG: tl.constexpr):
    if LOG:
        return x - m - log_s
    else:
        return tl.exp(x - m) * inv_s


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
            y = _softmax_out(x.to(tl.float32), m, log_s, inv_s, LOG)
            tl.store(y_row + start + cols, y.to(y_ptr.dtype.element_ty), mask=mask,
                     eviction_policy=EVICT_STREAM)


@triton.jit
def _chunk_place(task, n_tasks, n_cols, width, SPLIT: tl.constexpr, VEC: tl.constexpr):
    """Chunk `task`'s row: its start and end, its 16-byte-aligned body [body, body_end); the chunk's index in
    the row, its start and whether it is live (see _lane_chunk)."""
    row_start = tl.cast(task // SPLIT, tl.int64) * n_cols
    row_end = row_start + n_cols
    body = (row_start + VEC - 1) // VEC * VEC
    body_end = row_end // VEC * VEC
    part = task % SPLIT
    return row_start, row_end, body, body_end, part, body + part * width, task < n_tasks


@triton.jit
def _publish_tagged(slot_ptr, m_c, s_c):
    """(max, sum) as one 64-bit word (the sum's sign bit clear, so the word is >= 0): a reader sees all of
    it or the -1 fill, so no counter and no release fence (which would first wait for this program's
    outstanding y stores and prefetch)."""
    lo = m_c.to(tl.int32, bitcast=True).to(tl.int64) & 0xFFFFFFFF
    hi = (s_c.to(tl.int32, bitcast=True) & 0x7FFFFFFF).to(tl.int64)
    tl.atomic_xchg(slot_ptr, (hi << 32) | lo, sem="relaxed")


@triton.jit
def _exp(x):
    """exp(x) as exp2(x * log2(e)), a multiply and one MUFU.EX2; tl.exp's ex2 also rescales around each
    MUFU so subnormal results survive (a compare and two predicated multiplies more)."""
    return tl.exp2(x * _LOG2E)


@triton.jit
def _lse_combine(m_a, s_a, m_b, s_b):
    """Two (max, sum of exp(x - max)) pairs as one: the reduction tree's step, through exp2."""
    m = tl.maximum(m_a, m_b)
    return m, s_a * tl.exp2((m_a - m) * _LOG2E) + s_b * tl.exp2((m_b - m) * _LOG2E)


@triton.jit
def _lane_chunk(task, n_tasks, n_cols, width, SPLIT: tl.constexpr, CHUNK: tl.constexpr, TILE: tl.constexpr,
                VEC: tl.constexpr):
    """Where chunk `task` lives (masks all off past the last task), held as [CHUNK // TILE, TILE] (a
    thread's values of one column are a lane of the per-lane stats). Row task // SPLIT is cut into a
    16-byte-aligned body, `width` values (a multiple of 16) to each of its SPLIT chunks, and its < VEC
    unaligned values before and after the body (the edges), taken by the row's first and last chunk. Returns
    the chunk's start, offsets and mask, and the edges' offsets and mask over arange(2 * VEC). The body's
    bounds are multiples of VEC through `// VEC * VEC`, which Triton's alignment analysis follows, so chunk
    loads and stores stay 16-byte vectors on misaligned rows."""
    row_start, row_end, body, body_end, part, start, live = _chunk_place(task, n_tasks, n_cols, width, SPLIT,
                                                                         VEC)
    offs = tl.arange(0, CHUNK // TILE)[:, None] * TILE + tl.arange(0, TILE)[None, :]
    n_live = tl.where(live, tl.minimum(body_end - start, width), 0).to(tl.int32)  # one compare per vector
    e = tl.arange(0, 2 * VEC)
    head = e < VEC  # lanes [0, VEC): the head; [VEC, 2 VEC): the tail
    e_offs = tl.where(head, row_start + e, tl.maximum(body_end, body) + e - VEC)
    e_end = tl.where(head, tl.minimum(body, row_end), row_end)
    e_part = tl.where(head, 0, SPLIT - 1)
    e_mask = (e_offs < e_end) & (tl.where(live, part, SPLIT) == e_part)
    return start, offs, offs < n_live, e_offs, e_mask


@triton.jit
def _lane_load(x_ptr, task, n_tasks, n_cols, width, SPLIT: tl.constexpr, CHUNK: tl.constexpr,
               TILE: tl.constexpr, VEC: tl.constexpr):
    """Chunk `task` [CHUNK // TILE, TILE] and its edges in x's dtype, _NEG where masked (no select needed
    before the max or the sum; fp16 makes it -inf, which the per-lane max clamps)."""
    start, offs, mask, e_offs, e_mask = _lane_chunk(task, n_tasks, n_cols, width, SPLIT, CHUNK, TILE, VEC)
    x = tl.load(x_ptr + start + offs, mask=mask, other=_NEG)
    x_e = tl.load(x_ptr + e_offs, mask=e_mask, other=_NEG)
    return x, x_e


@triton.jit
def _lane_partial(x, x_e, LOG: tl.constexpr):
    """(max, sum of exp(x - max)) of a [R, TILE] chunk (fp32, _NEG where masked) and its edge values: a
    thread's max and sum per column (no exchange), then ONE reduction tree of (max, sum) pairs (one barrier
    pair). Also what the output is computed from: x for log-softmax, exp(x - lane max) for softmax; and the
    lane maxima. The lane max is clamped to _LANE_FLOOR: masked (_NEG) and -inf values then give
    exp(...) = 0, and the lane max times log2(e) stays finite."""
    m_lane = tl.maximum(tl.max(x, axis=0), _LANE_FLOOR)
    e = _exp(x - m_lane[None, :])
    m_c, s_c = tl.reduce((m_lane, tl.sum(e, axis=0)), 0, _lse_combine)
    m_e = tl.maximum(m_c, tl.max(x_e, axis=0))
    s_c = s_c * _exp(m_c - m_e) + tl.sum(_exp(x_e - m_e), axis=0)
    m_c = m_e
    if LOG:
        return m_c, s_c, x, m_lane
    else:
        return m_c, s_c, e, m_lane


@triton.jit
def _lane_out(v, m_lane, m, s, LOG: tl.constexpr):
    """The output from _lane_partial's v given the row's (max, sum): one add or one multiply per value."""
    if LOG:
        return v - (m + tl.log(s))
    else:
        return v * (_exp(m_lane - m) / s)[None, :]


@triton.jit
def _wait_words(slots_ptr, parts, max_spin, SPLIT: tl.constexpr):
    """The row's SPLIT (max, sum) words, polled until all are published or max_spin polls, and merged: the
    "all in" test is a 32-bit min over the words' high halves (a -1 fill reads negative), kept rather than
    recomputed; padding lanes read a (_NEG, 0) word, so the merge needs no selects. Returns whether a chunk
    was still missing and the row's (max, sum)."""
    pmask = parts < SPLIT
    words = tl.load(slots_ptr + parts, mask=pmask, other=_PAD_WORD, volatile=True)
    missing = tl.min((words >> 32).to(tl.int32), axis=0) < 0
    spins = 0
    while missing & (spins < max_spin):
        words = tl.load(slots_ptr + parts, mask=pmask, other=_PAD_WORD, volatile=True)
        missing = tl.min((words >> 32).to(tl.int32), axis=0) < 0
        spins += 1
    p_m = (words & 0xFFFFFFFF).to(tl.int32).to(tl.float32, bitcast=True)
    p_s = (words >> 32).to(tl.int32).to(tl.float32, bitcast=True)
    m = tl.max(p_m, axis=0)
    return missing, m, tl.sum(p_s * _exp(p_m - m), axis=0)


@triton.jit
def _lane_store_masked(y_ptr, y, offs, mask, x_e, e_offs, e_mask, m, s, LOG: tl.constexpr):
    """A chunk's masked store and its edges' output."""
    tl.store(y_ptr + offs, y, mask=mask)
    y_e = _softmax_out(x_e.to(tl.float32), m, tl.log(s), 1.0 / s, LOG)
    tl.store(y_ptr + e_offs, y_e.to(y_ptr.dtype.element_ty), mask=e_mask)


@triton.jit
def _softmax_coop_kernel(
    x_ptr, y_ptr, part_ptr, n_rows, n_cols, width, max_spin,
    SPLIT: tl.constexpr, SPLIT_P2: tl.constexpr, CHUNK: tl.constexpr, TILE: tl.constexpr, VEC: tl.constexpr,
    LOG: tl.constexpr,
):
    """Contiguous rows (row stride n_cols), SPLIT chunks each, a chunk as [CHUNK // TILE, TILE]: its
    (max, sum) from per-lane stats through one tree, published as one tagged word. The grid is a multiple
    of SPLIT, so a program keeps one chunk index and the programs of a row share a round."""
    n_tasks = n_rows * SPLIT
    step = tl.num_programs(0)
    parts = tl.arange(0, SPLIT_P2)
    x_next, xe_next = _lane_load(x_ptr, tl.program_id(0), n_tasks, n_cols, width, SPLIT, CHUNK, TILE, VEC)
    for task in range(tl.program_id(0), n_tasks, step):
        row = task // SPLIT
        x_raw, xe_raw = x_next, xe_next
        start, offs, mask, e_offs, e_mask = _lane_chunk(task, n_tasks, n_cols, width, SPLIT, CHUNK, TILE, VEC)
        m_c, s_c, v, m_lane = _lane_partial(x_raw.to(tl.float32), xe_raw.to(tl.float32), LOG)
        _publish_tagged(part_ptr + task, m_c, s_c)
        # the next chunk's load is in flight while this program polls (x is read-only)
        x_next, xe_next = _lane_load(x_ptr, task + step, n_tasks, n_cols, width, SPLIT, CHUNK, TILE, VEC)
        missing, m, s = _wait_words(part_ptr + row * SPLIT, parts, max_spin, SPLIT)
        if missing:  # a peer is not running: read the whole row (correct, slower; never a hang), a value a
            #          thread at a time so the chunks in registers keep their place
            m, s = _row_online_stats(x_ptr + tl.cast(row, tl.int64) * n_cols, n_cols, TILE // VEC, "", False)
        y = _lane_out(v, m_lane, m, s, LOG).to(y_ptr.dtype.element_ty)
        _lane_store_masked(y_ptr, y, start + offs, mask, xe_raw, e_offs, e_mask, m, s, LOG)


def _softmax_coop(x2: torch.Tensor, y: torch.Tensor, log: bool, t: dict) -> None:
    """Rows split into SPLIT chunks of near-equal width (a multiple of 16 values, at most COOP_CHUNK)."""
    n_rows, n_cols = x2.shape
    chunk = max(16, min(t["COOP_CHUNK"], triton.next_power_of_2(n_cols)))
    split = triton.cdiv(n_cols, chunk)
    width = triton.cdiv(triton.cdiv(n_cols, split), 16) * 16  # the 16 lets Triton prove chunk starts aligned
    grid, maxnreg = _coop_launch(split, n_rows, t["num_warps_coop"], t["COOP_PROGRAMS_PER_SM"], x2.device)
    part = torch.full((n_rows * split,), -1, dtype=torch.int64, device=x2.device)  # a (max, sum) word a chunk
    max_spin = _MAX_SPIN_GPU if x2.is_cuda else 0  # the interpreter runs programs one after another
    vec = 16 // x2.element_size()
    _softmax_coop_kernel[grid](
        x2, y, part, n_rows, n_cols, width, max_spin,
        SPLIT=split, SPLIT_P2=triton.next_power_of_2(split), CHUNK=chunk,
        TILE=min(chunk, vec * 32 * t["num_warps_coop"]), VEC=vec, LOG=log, num_warps=t["num_warps_coop"],
        maxnreg=maxnreg,
    )


def _wide_strategy(t: dict, n_rows: int, n_cols: int, x: torch.Tensor) -> str:
    """WIDE_STRATEGY, with "auto" resolved: looped while the rows in flight (one a persistent program) fit in
    LOOP_L2_BYTES, so that its second pass re-reads them from L2; else coop (one read, one write)."""
    if t["WIDE_STRATEGY"] != "auto":
        return t["WIDE_STRATEGY"]
    in_flight = min(n_rows, _num_sms(x.device) * t["PROGRAMS_PER_SM"])
    return "looped" if in_flight * n_cols * x.element_size() <= t["LOOP_L2_BYTES"] else "coop"


def _softmax_rows(x: torch.Tensor, log: bool, t: dict) -> torch.Tensor:
    """Softmax (log-softmax with `log`) over the last dimension, with `t` a family's TUNABLES."""
    if x.dim() < 1 or x.numel() == 0:
        raise ValueError(f"softmax input must be a non-empty tensor, got shape {tuple(x.shape)}")
    shape = x.shape
    x2 = x.reshape(-1, shape[-1])
    if x2.stride(-1) != 1:
        x2 = x2.contiguous()
    n_rows, n_cols = x2.shape
    y = torch.empty((n_rows, n_cols), dtype=x.dtype, device=x.device)
    strategy = "fused" if n_cols <= t["MAX_FUSED_N"] else _wide_strategy(t, n_rows, n_cols, x)
    if strategy == "fused":
        block = triton.next_power_of_2(n_cols)
        rows = t["ROWS_FUSED"] or max(1, min(2048 // block, triton.next_power_of_2(n_rows)))  # narrow rows
        warps = t["num_warps_fused"] or max(2, min(16, rows * block // (32 * t["ELEMS_PER_THREAD"])))
        grid = (triton.cdiv(n_rows, rows),)
        _softmax_fused_kernel[grid](
            x2, y, n_rows, n_cols, x2.stride(0), y.stride(0),
            ROWS=rows, BLOCK=block, LOG=log, num_warps=warps,
        )
    elif strategy == "coop":
        _softmax_coop(x2.contiguous(), y, log, t)  # row stride n_cols: one alignment per row
    elif strategy == "looped":
        grid = (min(n_rows, _num_sms(x.device) * t["PROGRAMS_PER_SM"]),)
        keep, stream = _EVICT_LOOP[t["EVICT_LOOP"]]
        _softmax_looped_kernel[grid](
            x2, y, n_rows, n_cols, x2.stride(0), y.stride(0),
            BLOCK=t["BLOCK_LOOP"], LOG=log, EVICT_KEEP=keep, EVICT_STREAM=stream, ONE_EXP=True,
            num_warps=t["num_warps_loop"],
        )
    else:
        raise ValueError(f"softmax: TUNABLES['WIDE_STRATEGY'] = {t['WIDE_STRATEGY']!r}, "
                         "expected 'auto', 'coop' or 'looped'")
    return y.reshape(shape)
