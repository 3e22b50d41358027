"""Group norm over (N, C, *spatial) with a per-channel affine, fp32 statistics.

Group (n, g) is one contiguous run of (C / G) * HW elements, so it is a "row" of a row-norm kernel;
the channel of element i of a group is g * (C / G) + i // HW, which picks its weight and bias.
- fused (group <= MAX_FUSED_N elements): the group stays in registers: one read, one write.
- GROUP_STRATEGY "coop" (groups larger than MAX_FUSED_N, or every group when COOP_ALL): SPLIT =
  cdiv(group, COOP_CHUNK) programs share a group, each holding its chunk in registers; each publishes
  its chunk's (count, mean, M2), bumps the group's counter and polls it until all SPLIT are in, merges
  them (Chan) and writes its chunk from registers: one read, one write. The persistent grid is a
  multiple of SPLIT, so a group's programs share a round; a program that polls max_spin times without
  seeing its peers (not resident, or the interpreter running programs one by one) reads the whole
  group itself, so nothing waits forever. A chunk is ROWS x RUN: runs of RUN contiguous values inside one
  channel plane, so weight and bias are loaded per row. At most 64 warps per SM, and maxnreg keeps that
  many programs really resident. COOP_PREFETCH issues the next chunk's load before polling (1) or before
  reducing (2); COOP_SYNC "tagged" publishes each chunk's (mean, M2) as one 64-bit word that doubles as its
  ready flag (no counter, no release fence waiting on the previous chunk's y stores). COOP_UNMASKED drops
  every mask when the chunks tile the groups exactly (a prefetch past the last task re-reads the last chunk,
  an L2 hit); COOP_STATS "shifted" (tagged) publishes each chunk's sums of x - K and (x - K)^2, K the group's
  first value, from one reduction tree, and each poll is one tree too (words not in, sum, sum of squares), so
  the merge costs nothing more; COOP_WORKSPACE "epoch" keeps the tagged words in a per-stream workspace
  tagged with each launch's parity (no fill kernel before the launch).
- GROUP_STRATEGY "looped" (larger groups, e.g. 16 channels x 64 x 64 = 65536): a persistent grid walks
  groups; pass 1 merges per-block (count, mean, M2) with Chan's formula, pass 2 re-reads the group from
  its end backwards (L2-warm when it hits) and writes y. On the H200 (32 x 512 x 64 x 64 fp32) 56% of
  the copy rate: the re-read mostly misses L2. EVICT_LOOP adds hints (keep pass 1's reads, stream the rest).
- FUSED_LAYOUT "2d": the fused path as a [GROUPS_PER_PROG, C/G, HW] tile (HW padded to a power of 2):
  weight and bias are loaded once per channel and broadcast, so no per-element integer division.
  Used when the padded tile is at most 2 * MAX_FUSED_N, else the flat fused path.
"""

import torch
import triton
import triton.language as tl
from torch import nn

TUNABLES = {
    "MAX_FUSED_N": 16384,  # largest group kept whole in registers
    "ELEMS_PER_THREAD": 16,  # fused path: sets num_warps from the block size
    "BLOCK_LOOP": 4096,
    "num_warps_loop": 16,
    "PROGRAMS_PER_SM": 2,
    "num_warps_fused": 4,  # fused path: 0 = from ELEMS_PER_THREAD
    "GROUP_STRATEGY": "coop",  # groups larger than MAX_FUSED_N: "looped" (two passes) or "coop" (split)
    "COOP_ALL": False,  # coop path also for groups that fit in registers (more, smaller programs)
    "COOP_CHUNK": 8192,  # coop path: elements of a group per program, held in registers (power of 2)
    "num_warps_coop": 8,
    "COOP_PROGRAMS_PER_SM": 2,  # coop path: persistent programs per SM (all must be resident to not poll out)
    "COOP_PREFETCH": 1,  # coop path: load the next chunk 0 = when its turn comes, 1 = while polling for the
    #                      current one's peers, 2 = before reducing the current one (DRAM stays busy)
    "COOP_SYNC": "tagged",  # coop path: "counter" (partials, then a per-group counter polled) or "tagged"
    #                          (each chunk's (mean, M2) in one 64-bit word that is its own ready flag)
    # The next three together: groupnorm_32g_fp32 0.1481 ms against 0.1525-0.1528 with none (SASS 647 -> 373
    # instructions and 9 -> 3 barriers a chunk); unmasked + shifted with "fill" 0.1507, "epoch" alone 0.1524,
    # unmasked alone 0.1611 (benchmarks/results/sweep-20261201T050529Z.json)
    "COOP_UNMASKED": True,  # coop path: no masks when chunks tile the groups exactly (else masked anyway)
    "COOP_STATS": "shifted",  # coop tagged: "chan" (chunk (mean, M2) from two trees, Chan-merged after polling) or
    #                           "shifted" (sums of x - K, (x - K)^2 in one tree; each poll one tree that also merges)
    "COOP_WORKSPACE": "epoch",  # coop tagged: "fill" (-1 words filled before each launch: a fill kernel) or
    #                             "epoch" (a cached per-stream workspace; each launch tags its words with its parity)
    "FUSED_LAYOUT": "2d",  # fused path: "flat" (1-D, channel = i // HW per element) or "2d" ([C/G, HW] tile,
    #                          weight/bias loaded once per channel, no integer division)
    "GROUPS_PER_PROG": 1,  # fused "2d": groups per program (power of 2), a [G, C/G, HW] tile
    "num_warps_2d": 4,
    "EVICT_FUSED": False,  # fused paths: evict_first on x loads and y stores (pure streaming)
    "EVICT_LOOP": False,  # looped path: evict_last on pass-1 loads, evict_first on pass-2 loads and stores
}
_MAX_SPIN_GPU = 50_000  # coop path: polls (~1 us each) before a program computes its group's stats itself
_MAX_WORKSPACES = 32  # coop "epoch": cached workspaces kept (cleared past this)
_WORKSPACES: dict = {}  # coop "epoch": (programs, words, device, stream) -> int64 [ticket counter, slot words...]


@triton.jit
def _groupnorm_fused_kernel(
    x_ptr, w_ptr, b_ptr, y_ptr, n_groups_total, group_size, hw, channels_per_group, n_groups, eps,
    BLOCK: tl.constexpr, EVICT: tl.constexpr,
):
    grp = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    mask = offs < group_size
    base = grp * group_size
    x = tl.load(x_ptr + base + offs, mask=mask, other=0.0, eviction_policy=EVICT).to(tl.float32)
    mean = tl.sum(x, axis=0) / group_size
    xc = tl.where(mask, x - mean, 0.0)
    rstd = tl.rsqrt(tl.sum(xc * xc, axis=0) / group_size + eps)
    ch = (grp % n_groups) * channels_per_group + offs // hw
    w = tl.load(w_ptr + ch, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + ch, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + base + offs, (xc * rstd * w + b).to(y_ptr.dtype.element_ty), mask=mask, eviction_policy=EVICT)


@triton.jit
def _groupnorm_fused2d_kernel(
    x_ptr, w_ptr, b_ptr, y_ptr, n_groups_total, group_size, hw, channels_per_group, n_groups, eps,
    GPP: tl.constexpr, BLOCK_C: tl.constexpr, BLOCK_HW: tl.constexpr, EVICT: tl.constexpr,
):
    """GPP whole groups per program as a [GPP, C/G, HW] tile: per-channel weight and bias are [GPP, C/G]."""
    grp = tl.program_id(0).to(tl.int64) * GPP + tl.arange(0, GPP)
    cs = tl.arange(0, BLOCK_C)
    js = tl.arange(0, BLOCK_HW)
    gmask = grp < n_groups_total
    wmask = gmask[:, None] & (cs < channels_per_group)[None, :]
    mask = wmask[:, :, None] & (js < hw)[None, None, :]
    offs = grp[:, None, None] * group_size + cs[None, :, None] * hw + js[None, None, :]
    x = tl.load(x_ptr + offs, mask=mask, other=0.0, eviction_policy=EVICT).to(tl.float32)
    mean = tl.sum(tl.sum(x, axis=2), axis=1) / group_size
    xc = tl.where(mask, x - mean[:, None, None], 0.0)
    rstd = tl.rsqrt(tl.sum(tl.sum(xc * xc, axis=2), axis=1) / group_size + eps)
    ch = (grp % n_groups)[:, None] * channels_per_group + cs[None, :]
    w = tl.load(w_ptr + ch, mask=wmask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + ch, mask=wmask, other=0.0).to(tl.float32)
    scale = w * rstd[:, None]
    y = xc * scale[:, :, None] + b[:, :, None]
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask, eviction_policy=EVICT)


@triton.jit
def _groupnorm_looped_kernel(
    x_ptr, w_ptr, b_ptr, y_ptr, n_groups_total, group_size, hw, channels_per_group, n_groups, eps,
    BLOCK: tl.constexpr, EVICT_KEEP: tl.constexpr, EVICT_STREAM: tl.constexpr,
):
    offs = tl.arange(0, BLOCK)
    for grp in range(tl.program_id(0), n_groups_total, tl.num_programs(0)):
        base = tl.cast(grp, tl.int64) * group_size
        mean, m2 = _group_stats(x_ptr + base, group_size, BLOCK, EVICT_KEEP)  # pass 1
        rstd = tl.rsqrt(m2 / group_size + eps)
        ch0 = (grp % n_groups) * channels_per_group
        last = tl.cdiv(group_size, BLOCK) - 1
        for i in range(last + 1):  # newest blocks first, while they are still in L2
            start = (last - i) * BLOCK
            mask = start + offs < group_size
            x = tl.load(x_ptr + base + start + offs, mask=mask, other=0.0, eviction_policy=EVICT_STREAM)
            x = x.to(tl.float32)
            ch = ch0 + (start + offs) // hw
            w = tl.load(w_ptr + ch, mask=mask, other=0.0).to(tl.float32)
            b = tl.load(b_ptr + ch, mask=mask, other=0.0).to(tl.float32)
            y = (x - mean) * rstd * w + b
            tl.store(y_ptr + base + start + offs, y.to(y_ptr.dtype.element_ty), mask=mask,
                     eviction_policy=EVICT_STREAM)


@triton.jit
def _group_stats(x_grp, group_size, BLOCK: tl.constexpr, EVICT: tl.constexpr):
    """(mean, M2) of one group read in BLOCK steps, Chan-merged per block."""
    offs = tl.arange(0, BLOCK)
    count = 0.0
    mean = 0.0
    m2 = 0.0
    for start in range(0, group_size, BLOCK):
        mask = start + offs < group_size
        x = tl.load(x_grp + start + offs, mask=mask, other=0.0, eviction_policy=EVICT).to(tl.float32)
        n_b = tl.sum(mask.to(tl.float32), axis=0)
        mean_b = tl.sum(x, axis=0) / n_b
        d = tl.where(mask, x - mean_b, 0.0)
        m2_b = tl.sum(d * d, axis=0)
        total = count + n_b
        delta = mean_b - mean
        mean = mean + delta * (n_b / total)
        m2 = m2 + m2_b + delta * delta * (count * n_b / total)
        count = total
    return mean, m2


@triton.jit
def _coop_chunk(task, SPLIT: tl.constexpr, n_groups_total, group_size, hw, runs, rows_per_group,
                ROWS: tl.constexpr, RUN: tl.constexpr):
    """Offsets, mask and in-group channel of chunk `task` (mask all off past the last task): ROWS runs of
    RUN contiguous values of group task // SPLIT, a channel plane being runs = cdiv(HW, RUN) runs.
    A run never crosses a plane, so weight and bias are per row, not per element."""
    r = (task % SPLIT) * ROWS + tl.arange(0, ROWS)
    p = r // runs
    cols = ((r - p * runs) * RUN)[:, None] + tl.arange(0, RUN)[None, :]
    mask = (r < tl.where(task < SPLIT * n_groups_total, rows_per_group, 0))[:, None] & (cols < hw)
    offs = tl.cast(task // SPLIT, tl.int64) * group_size + (p * hw)[:, None] + cols
    return offs, mask, p


@triton.jit
def _coop_load(x_ptr, task, SPLIT: tl.constexpr, n_groups_total, group_size, hw, runs, rows_per_group,
               ROWS: tl.constexpr, RUN: tl.constexpr, EXACT: tl.constexpr):
    """Chunk `task` in x's dtype (zeros past the last task: a program's prefetch after its last one). EXACT
    (chunks tile the groups): no mask; past the last task the last chunk again, which every program's last
    prefetch reads, so it is an L2 hit."""
    if EXACT:
        last = SPLIT * n_groups_total - 1
        offs, _, _ = _coop_chunk(tl.minimum(task, last), SPLIT, n_groups_total, group_size, hw, runs,
                                 rows_per_group, ROWS, RUN)
        return tl.load(x_ptr + offs)
    offs, mask, _ = _coop_chunk(task, SPLIT, n_groups_total, group_size, hw, runs, rows_per_group, ROWS, RUN)
    return tl.load(x_ptr + offs, mask=mask, other=0.0)


@triton.jit
def _chunk_counts(parts, rows_per_unit, runs, last_run, ROWS: tl.constexpr, RUN: tl.constexpr):
    """Values in chunks `parts` of a unit (group): ROWS runs each, a plane's last run only last_run long."""
    first = parts * ROWS
    end = tl.minimum(first + ROWS, rows_per_unit)
    n_rows = tl.maximum(end - first, 0)
    plane_ends = tl.where(n_rows > 0, end // runs - first // runs, 0)  # rows r with r % runs == runs - 1
    return (n_rows * RUN - plane_ends * (RUN - last_run)).to(tl.float32)


@triton.jit
def _launch_tag(ticket_ptr, EPOCH: tl.constexpr):
    """What this launch ORs into its tagged words: 0, or with EPOCH (a cached workspace, never refilled) bit 63
    on every other launch. Launches on one stream run one after another, so the n programs of its e-th launch
    draw tickets e * n ... e * n + n - 1 and parity (ticket // n) & 1 flips with each launch: the words the
    launch before left read as "not in" (as does the -1 they start as), so no fill kernel is needed."""
    tag = tl.full([], 0, tl.int64)
    if EPOCH:
        ticket = tl.atomic_add(ticket_ptr, 1, sem="relaxed")
        tag = ((ticket // tl.num_programs(0)) & 1) << 63
    return tag


@triton.jit
def _publish_tagged(slot_ptr, lo_f, hi_f, tag):
    """Two floats as one 64-bit word (hi's sign bit clear, then `tag` ORed in): a reader sees all of it or the
    -1 fill, so no counter and no release fence (which would first wait for this program's outstanding y
    stores). hi is never negative (an M2 or a sum of squares)."""
    lo = lo_f.to(tl.int32, bitcast=True).to(tl.int64) & 0xFFFFFFFF
    hi = (hi_f.to(tl.int32, bitcast=True) & 0x7FFFFFFF).to(tl.int64)
    tl.atomic_xchg(slot_ptr, ((hi << 32) | lo) | tag, sem="relaxed")


@triton.jit
def _wait_tagged(slots_ptr, parts, tag, max_spin, SPLIT: tl.constexpr):
    """The unit's SPLIT (mean, M2) words, polled until all are published or max_spin polls; and whether all were.
    XOR with this launch's tag: its words read >= 0, the fill's and the launch before's < 0."""
    pmask = parts < SPLIT
    words = tl.load(slots_ptr + parts, mask=pmask, other=tag, volatile=True) ^ tag
    spins = 0
    while (tl.min(words, axis=0) < 0) & (spins < max_spin):
        words = tl.load(slots_ptr + parts, mask=pmask, other=tag, volatile=True) ^ tag
        spins += 1
    p_mean = (words & 0xFFFFFFFF).to(tl.int32).to(tl.float32, bitcast=True)
    p_m2 = (words >> 32).to(tl.int32).to(tl.float32, bitcast=True)
    return tl.min(words, axis=0) >= 0, p_mean, p_m2


@triton.jit
def _add2(a0, a1, b0, b1):
    return a0 + b0, a1 + b1


@triton.jit
def _add3(a0, a1, a2, b0, b1, b2):
    return a0 + b0, a1 + b1, a2 + b2


@triton.jit
def _tagged_sums(slots_ptr, parts, tag, SPLIT: tl.constexpr):
    """The sums of the (lo, hi) floats of the unit's tagged words and how many are not in yet, as one tree:
    one poll is one reduction, and when all are in the merge is done with it."""
    words = tl.load(slots_ptr + parts, mask=parts < SPLIT, other=tag, volatile=True) ^ tag
    lo = (words & 0xFFFFFFFF).to(tl.int32).to(tl.float32, bitcast=True)
    hi = (words >> 32).to(tl.int32).to(tl.float32, bitcast=True)
    return tl.reduce((lo, hi, (words < 0).to(tl.float32)), 0, _add3)


@triton.jit
def _wait_sums(slots_ptr, parts, tag, max_spin, SPLIT: tl.constexpr):
    """Polls the unit's shifted-sum words until all are in or max_spin polls: (all in, sum, sum of squares)."""
    s, q, missing = _tagged_sums(slots_ptr, parts, tag, SPLIT)
    spins = 0
    while (missing > 0) & (spins < max_spin):
        s, q, missing = _tagged_sums(slots_ptr, parts, tag, SPLIT)
        spins += 1
    return missing == 0, s, q


@triton.jit
def _shifted(x, mask, k, EXACT: tl.constexpr):
    """x - k, 0 where masked off (EXACT: nothing is)."""
    if EXACT:
        return x - k
    return tl.where(mask, x - k, 0.0)


@triton.jit
def _chunk_stats(x, mask, EXACT: tl.constexpr, ROWS: tl.constexpr, RUN: tl.constexpr):
    """The chunk's (count, mean, M2) (EXACT: every value counts: no masking, no count tree, one-level sums)."""
    if EXACT:
        n_c = tl.full([], ROWS * RUN, tl.float32)
        mean_c = tl.sum(x, axis=None) / n_c
        d = x - mean_c
        m2_c = tl.sum(d * d, axis=None)
    else:
        n_c = tl.sum(tl.sum(mask.to(tl.float32), axis=1), axis=0)
        mean_c = tl.sum(tl.sum(x, axis=1), axis=0) / tl.maximum(n_c, 1.0)
        d = tl.where(mask, x - mean_c, 0.0)
        m2_c = tl.sum(tl.sum(d * d, axis=1), axis=0)
    return n_c, mean_c, m2_c


@triton.jit
def _wait_counted(part_ptr, count_ptr, done, slots, n_tasks, max_spin, SPLIT: tl.constexpr, SPLIT_P2: tl.constexpr):
    """Polls the unit's counter until SPLIT chunks are in (or max_spin polls); their (count, mean, M2) rows."""
    spins = tl.full([], 0, tl.int32)
    while (done < SPLIT) & (spins < max_spin):
        # acquire only: no fence, so a poll does not wait for the prefetch; the warp just stalls on L2
        done = tl.atomic_add(count_ptr, 0, sem="acquire")
        spins += 1
    pmask = tl.arange(0, SPLIT_P2) < SPLIT
    p_n = tl.load(part_ptr + slots, mask=pmask, other=0.0, volatile=True)
    p_mean = tl.load(part_ptr + n_tasks + slots, mask=pmask, other=0.0, volatile=True)
    p_m2 = tl.load(part_ptr + 2 * n_tasks + slots, mask=pmask, other=0.0, volatile=True)
    return done >= SPLIT, p_n, p_mean, p_m2


@triton.jit
def _merge(p_n, p_mean, p_m2, group_size):
    """Chan's merge of partial (count, mean, M2)s: no sum-of-squares cancellation."""
    mean = tl.sum(p_n * p_mean, axis=0) / group_size
    dm = p_mean - mean
    return mean, tl.sum(p_m2 + p_n * dm * dm, axis=0)


@triton.jit
def _groupnorm_coop_kernel(
    x_ptr, w_ptr, b_ptr, y_ptr, part_ptr, count_ptr, n_groups_total, group_size, hw, channels_per_group,
    n_groups, runs, eps, max_spin,
    SPLIT: tl.constexpr, SPLIT_P2: tl.constexpr, ROWS: tl.constexpr, RUN: tl.constexpr,
    PREFETCH: tl.constexpr, TAGGED: tl.constexpr, EXACT: tl.constexpr, SHIFTED: tl.constexpr,
    EPOCH: tl.constexpr,
):
    """count_ptr: the group counters ("counter") or the ticket word (EPOCH)."""
    n_tasks = n_groups_total * SPLIT
    rows_per_group = channels_per_group * runs
    step = tl.num_programs(0)
    parts = tl.arange(0, SPLIT_P2)
    if PREFETCH > 0:
        x_next = _coop_load(x_ptr, tl.program_id(0), SPLIT, n_groups_total, group_size, hw, runs, rows_per_group,
                            ROWS, RUN, EXACT)
    tag = _launch_tag(count_ptr, EPOCH)  # after the first load: its round trip overlaps it
    for task in range(tl.program_id(0), n_tasks, step):
        grp = task // SPLIT
        if SHIFTED:  # the group's first value, every peer's shift (issued early: an L2 hit after the first)
            k = tl.load(x_ptr + tl.cast(grp, tl.int64) * group_size).to(tl.float32)
        if PREFETCH > 0:
            x_raw = x_next
        else:
            x_raw = _coop_load(x_ptr, task, SPLIT, n_groups_total, group_size, hw, runs, rows_per_group, ROWS, RUN,
                               EXACT)
        if PREFETCH == 2:  # the next chunk's load goes out before this one is even reduced
            x_next = _coop_load(x_ptr, task + step, SPLIT, n_groups_total, group_size, hw, runs, rows_per_group,
                                ROWS, RUN, EXACT)
        _, mask, _ = _coop_chunk(task, SPLIT, n_groups_total, group_size, hw, runs, rows_per_group, ROWS, RUN)
        x = x_raw.to(tl.float32)
        # publish this chunk's statistics; wait for the group's other chunks
        if SHIFTED:  # the apply works on x - k too: one copy of the chunk stays live, not two
            x = _shifted(x, mask, k, EXACT)
            flat = tl.reshape(x, [ROWS * RUN], can_reorder=True)  # what axis=None does (the interpreter can't)
            s_c, q_c = tl.reduce((flat, flat * flat), 0, _add2)
            _publish_tagged(part_ptr + task, s_c, q_c, tag)
        else:
            n_c, mean_c, m2_c = _chunk_stats(x, mask, EXACT, ROWS, RUN)
            if TAGGED:
                _publish_tagged(part_ptr + task, mean_c, m2_c, tag)
            else:
                tl.store(part_ptr + task, n_c)
                tl.store(part_ptr + n_tasks + task, mean_c)
                tl.store(part_ptr + 2 * n_tasks + task, m2_c)
                tl.debug_barrier()
                done = tl.atomic_add(count_ptr + grp, 1) + 1  # acq_rel: the partial is visible before the count
        if PREFETCH == 1:  # the next chunk's load is in flight while this program polls (x is read-only)
            x_next = _coop_load(x_ptr, task + step, SPLIT, n_groups_total, group_size, hw, runs, rows_per_group,
                                ROWS, RUN, EXACT)
        if SHIFTED:
            ready, s, q = _wait_sums(part_ptr + grp * SPLIT, parts, tag, max_spin, SPLIT)
        elif TAGGED:
            ready, p_mean, p_m2 = _wait_tagged(part_ptr + grp * SPLIT, parts, tag, max_spin, SPLIT)
            p_n = _chunk_counts(parts, rows_per_group, runs, hw - (runs - 1) * RUN, ROWS, RUN)
        else:
            ready, p_n, p_mean, p_m2 = _wait_counted(part_ptr, count_ptr + grp, done, grp * SPLIT + parts, n_tasks,
                                                     max_spin, SPLIT, SPLIT_P2)
        if ready:
            if SHIFTED:  # the mean of x - k (what the apply works on), M2 = q - s^2 / n
                mean = s / group_size
                m2 = tl.maximum(q - s * mean, 0.0)
            else:
                mean, m2 = _merge(p_n, p_mean, p_m2, group_size)
        else:  # a peer is not running: read the whole group (correct, slower; never a hang)
            mean, m2 = _group_stats(x_ptr + tl.cast(grp, tl.int64) * group_size, group_size, 2048, "")
            if SHIFTED:
                mean -= k
        rstd = tl.rsqrt(m2 / group_size + eps)
        offs, mask, p = _coop_chunk(task, SPLIT, n_groups_total, group_size, hw, runs, rows_per_group, ROWS, RUN)
        ch = (grp % n_groups) * channels_per_group + p  # one channel per row
        if EXACT:
            scale = rstd * tl.load(w_ptr + ch).to(tl.float32)
            shift = tl.load(b_ptr + ch).to(tl.float32) - mean * scale
        else:
            row_ok = p < channels_per_group
            scale = rstd * tl.load(w_ptr + ch, mask=row_ok, other=0.0).to(tl.float32)
            shift = tl.load(b_ptr + ch, mask=row_ok, other=0.0).to(tl.float32) - mean * scale
        y = x * scale[:, None] + shift[:, None]
        if EXACT:
            tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty))
        else:
            tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


def _num_sms(device: torch.device) -> int:
    if device.type == "cuda":
        return torch.cuda.get_device_properties(device).multi_processor_count
    return 4  # the CPU interpreter: a small grid


def _fits_2d(cpg: int, hw: int, max_fused: int) -> bool:
    """The padded [C/G, HW] tile stays within twice the flat path's register budget."""
    return triton.next_power_of_2(cpg) * triton.next_power_of_2(hw) <= 2 * triton.next_power_of_2(max_fused)


def _run_length(hw: int, chunk: int) -> int:
    """Contiguous values per tile row: the power of 2 (at least 64 where the chunk allows) that wastes the
    fewest masked lanes when a plane is cut into runs, the longer on a tie (3136 = 49 x 64 -> 64)."""
    top = min(chunk, triton.next_power_of_2(hw))
    candidates = [top >> k for k in range(top.bit_length()) if top >> k >= min(64, top)]
    return min(candidates, key=lambda run: (triton.cdiv(hw, run) * run, -run))


def _coop_launch(n_tasks_per_unit: int, n_units: int, num_warps: int, programs_per_sm: int, device) -> tuple:
    """(grid, maxnreg) of a persistent coop launch whose rounds are whole units (groups) and co-resident.

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


def _coop_choice(name: str, allowed: tuple, tagged: bool) -> bool:
    """Whether TUNABLES[name] picks its second value, which only tagged words carry: with COOP_SYNC "counter" the
    first (the counter's own partials and fill) applies whatever the key says."""
    value = TUNABLES[name]
    if value not in allowed:
        raise ValueError(f"groupnorm: TUNABLES[{name!r}] = {value!r}, expected one of {allowed}")
    return tagged and value == allowed[1]


def _tagged_words(device, n_programs: int, n_words: int, epoch: bool) -> tuple:
    """(ticket, slots) of a tagged coop launch: without epoch n_words fresh -1 words (the ticket, never read,
    stands in); with it a workspace cached per (programs, words, device, stream), made once as a 0 ticket counter
    and -1 words: a launch writes every word, so the one before left them all with the other parity, and
    one workspace per stream keeps concurrent launches apart."""
    if not epoch:
        slots = torch.full((n_words,), -1, dtype=torch.int64, device=device)
        return slots, slots
    stream = torch.cuda.current_stream(device).cuda_stream if device.type == "cuda" else 0
    key = (n_programs, n_words, str(device), stream)
    if key not in _WORKSPACES:
        if len(_WORKSPACES) >= _MAX_WORKSPACES:
            _WORKSPACES.clear()
        workspace = torch.full((1 + n_words,), -1, dtype=torch.int64, device=device)
        workspace[0] = 0
        _WORKSPACES[key] = workspace
    workspace = _WORKSPACES[key]
    return workspace[:1], workspace[1:]


def _group_norm_coop(x, w, b, y, num_groups: int, eps: float):
    n, c = x.shape[0], x.shape[1]
    hw = x.numel() // (n * c)
    cpg = c // num_groups
    group_size = cpg * hw
    total = n * num_groups
    t = TUNABLES
    if t["COOP_SYNC"] not in ("counter", "tagged"):
        raise ValueError(f"groupnorm: TUNABLES['COOP_SYNC'] = {t['COOP_SYNC']!r}, expected 'counter' or 'tagged'")
    chunk = min(t["COOP_CHUNK"], triton.next_power_of_2(group_size))
    run = _run_length(hw, chunk)
    runs = triton.cdiv(hw, run)
    rows = chunk // run
    split = triton.cdiv(cpg * runs, rows)
    grid, maxnreg = _coop_launch(split, total, t["num_warps_coop"], t["COOP_PROGRAMS_PER_SM"], x.device)
    tagged = t["COOP_SYNC"] == "tagged"
    shifted = _coop_choice("COOP_STATS", ("chan", "shifted"), tagged)
    epoch = _coop_choice("COOP_WORKSPACE", ("fill", "epoch"), tagged)
    exact = t["COOP_UNMASKED"] and hw % run == 0 and (cpg * runs) % rows == 0  # chunks tile every group
    if tagged:  # one (mean, M2) or (sum, sum of squares) word per chunk; no counter
        count, part = _tagged_words(x.device, grid[0], total * split, epoch)
    else:  # counts, means, M2s
        part = torch.empty((3 * total * split,), dtype=torch.float32, device=x.device)
        count = torch.zeros((total,), dtype=torch.int32, device=x.device)
    max_spin = _MAX_SPIN_GPU if x.is_cuda else 0  # the interpreter runs programs one after another
    _groupnorm_coop_kernel[grid](
        x, w, b, y, part, count, total, group_size, hw, cpg, num_groups, runs, eps, max_spin,
        SPLIT=split, SPLIT_P2=triton.next_power_of_2(split), ROWS=rows, RUN=run,
        PREFETCH=t["COOP_PREFETCH"], TAGGED=tagged, EXACT=exact, SHIFTED=shifted, EPOCH=epoch,
        num_warps=t["num_warps_coop"], maxnreg=maxnreg,
    )


def group_norm(x: torch.Tensor, num_groups: int, weight: torch.Tensor, bias: torch.Tensor, eps: float):
    if x.dim() < 2 or x.shape[1] % num_groups:
        raise ValueError(f"group norm: input {tuple(x.shape)} needs a channel dim divisible by {num_groups}")
    x = x.contiguous()
    n, c = x.shape[0], x.shape[1]
    hw = x.numel() // (n * c)
    cpg = c // num_groups
    group_size = cpg * hw
    y = torch.empty_like(x)
    w, b = weight.contiguous(), bias.contiguous()
    total = n * num_groups
    t = TUNABLES
    fits = group_size <= t["MAX_FUSED_N"]
    if t["FUSED_LAYOUT"] not in ("flat", "2d"):
        raise ValueError(f"groupnorm: TUNABLES['FUSED_LAYOUT'] = {t['FUSED_LAYOUT']!r}, expected 'flat' or '2d'")
    if t["GROUP_STRATEGY"] not in ("coop", "looped"):
        raise ValueError(f"groupnorm: TUNABLES['GROUP_STRATEGY'] = {t['GROUP_STRATEGY']!r}, expected 'coop' or 'looped'")
    if (t["GROUP_STRATEGY"] == "coop" and not fits) or (t["COOP_ALL"] and fits):
        _group_norm_coop(x, w, b, y, num_groups, eps)
    elif fits and t["FUSED_LAYOUT"] == "2d" and _fits_2d(cpg, hw, t["MAX_FUSED_N"]):
        gpp = t["GROUPS_PER_PROG"]
        _groupnorm_fused2d_kernel[(triton.cdiv(total, gpp),)](
            x, w, b, y, total, group_size, hw, cpg, num_groups, eps,
            GPP=gpp, BLOCK_C=triton.next_power_of_2(cpg), BLOCK_HW=triton.next_power_of_2(hw),
            EVICT="evict_first" if t["EVICT_FUSED"] else "", num_warps=t["num_warps_2d"],
        )
    elif fits:
        block = triton.next_power_of_2(group_size)
        warps = t["num_warps_fused"] or max(1, min(16, block // (32 * t["ELEMS_PER_THREAD"])))
        _groupnorm_fused_kernel[(total,)](
            x, w, b, y, total, group_size, hw, cpg, num_groups, eps, BLOCK=block,
            EVICT="evict_first" if t["EVICT_FUSED"] else "", num_warps=warps,
        )
    else:
        grid = (min(total, _num_sms(x.device) * t["PROGRAMS_PER_SM"]),)
        _groupnorm_looped_kernel[grid](
            x, w, b, y, total, group_size, hw, cpg, num_groups, eps,
            BLOCK=t["BLOCK_LOOP"], EVICT_KEEP="evict_last" if t["EVICT_LOOP"] else "",
            EVICT_STREAM="evict_first" if t["EVICT_LOOP"] else "", num_warps=t["num_warps_loop"],
        )
    return y


class ModelNew(nn.Module):
    """Same parameters (created in the same order) as the family's specs: weight, bias of shape (C,)."""

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5):
        super().__init__()
        self.num_groups = num_groups
        self.weight = nn.Parameter(torch.randn(num_channels))
        self.bias = nn.Parameter(torch.randn(num_channels))
        self.eps = eps

    def forward(self, x):
        return group_norm(x, self.num_groups, self.weight, self.bias, self.eps)
