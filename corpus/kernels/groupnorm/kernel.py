"""Group norm over (N, C, *spatial) with a per-channel affine, fp32 statistics.

Group (n, g) is one contiguous run of (C / G) * HW elements, so it is a "row" of a row-norm kernel;
the channel of element i of a group is g * (C / G) + i // HW, which picks its weight and bias.
- fused (group <= MAX_FUSED_N elements): the group stays in registers: one read, one write. It is a
  [GROUPS_PER_PROG, C/G, HW] tile (C/G and HW padded to powers of 2: at most twice the group's next power
  of 2), so weight and bias are loaded once per channel and broadcast, with no per-element integer division.
- coop (larger groups): SPLIT = cdiv(group, COOP_CHUNK) programs share a group, each holding its chunk in
  registers. A chunk is ROWS x RUN: runs of RUN contiguous values inside one channel plane, so weight and
  bias are loaded per row. Each program publishes its chunk's sums of x - K and (x - K)^2 (K the group's first
  value) from one reduction tree as one 64-bit word that is its own ready flag, loads its next chunk, polls the
  group's words (each poll one tree that also merges) and writes its chunk from registers: one read, one
  write. The words live in a per-stream workspace that each launch tags with its parity (no fill kernel);
  where the chunks tile the groups exactly (COOP_UNMASKED) nothing is masked. The persistent grid is a
  multiple of SPLIT, so a group's programs share a round, and maxnreg keeps them resident; a program that
  polls max_spin times without seeing its peers (not resident, or the interpreter running programs one by
  one) reads the whole group itself, so nothing waits forever.
"""

import torch
import triton
import triton.language as tl
from torch import nn

from corpus.kernels._shared.coop import _MAX_SPIN_GPU, _coop_launch, _epoch_words

TUNABLES = {
    "MAX_FUSED_N": 16384,  # largest group kept whole in registers
    "GROUPS_PER_PROG": 1,  # fused path: groups per program (power of 2), a [G, C/G, HW] tile
    "num_warps_2d": 4,
    "COOP_CHUNK": 8192,  # coop path: elements of a group per program, held in registers (power of 2)
    "num_warps_coop": 8,
    "COOP_PROGRAMS_PER_SM": 2,  # coop path: persistent programs per SM (all must be resident to not poll out)
    "COOP_UNMASKED": True,  # coop path: no masks when chunks tile the groups exactly (else masked anyway)
}


@triton.jit
def _groupnorm_fused2d_kernel(
    x_ptr, w_ptr, b_ptr, y_ptr, n_groups_total, group_size, hw, channels_per_group, n_groups, eps,
    GPP: tl.constexpr, BLOCK_C: tl.constexpr, BLOCK_HW: tl.constexpr,
):
    """GPP whole groups per program as a [GPP, C/G, HW] tile: per-channel weight and bias are [GPP, C/G]."""
    grp = tl.program_id(0).to(tl.int64) * GPP + tl.arange(0, GPP)
    cs = tl.arange(0, BLOCK_C)
    js = tl.arange(0, BLOCK_HW)
    gmask = grp < n_groups_total
    wmask = gmask[:, None] & (cs < channels_per_group)[None, :]
    mask = wmask[:, :, None] & (js < hw)[None, None, :]
    offs = grp[:, None, None] * group_size + cs[None, :, None] * hw + js[None, None, :]
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(tl.sum(x, axis=2), axis=1) / group_size
    xc = tl.where(mask, x - mean[:, None, None], 0.0)
    rstd = tl.rsqrt(tl.sum(tl.sum(xc * xc, axis=2), axis=1) / group_size + eps)
    ch = (grp % n_groups)[:, None] * channels_per_group + cs[None, :]
    w = tl.load(w_ptr + ch, mask=wmask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + ch, mask=wmask, other=0.0).to(tl.float32)
    scale = w * rstd[:, None]
    y = xc * scale[:, :, None] + b[:, :, None]
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


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
def _launch_tag(ticket_ptr):
    """What this launch ORs into its tagged words: bit 63 on every other launch (the workspace is cached and
    never refilled). Launches on one stream run one after another, so the n programs of its e-th launch draw
    tickets e * n ... e * n + n - 1 and parity (ticket // n) & 1 flips with each launch: the words the launch
    before left read as "not in" (as does the -1 they start as), so no fill kernel is needed."""
    tag = tl.full([], 0, tl.int64)
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
def _groupnorm_coop_kernel(
    x_ptr, w_ptr, b_ptr, y_ptr, part_ptr, ticket_ptr, n_groups_total, group_size, hw, channels_per_group,
    n_groups, runs, eps, max_spin,
    SPLIT: tl.constexpr, SPLIT_P2: tl.constexpr, ROWS: tl.constexpr, RUN: tl.constexpr, EXACT: tl.constexpr,
):
    """ticket_ptr: the epoch workspace's ticket word (see _launch_tag)."""
    n_tasks = n_groups_total * SPLIT
    rows_per_group = channels_per_group * runs
    step = tl.num_programs(0)
    parts = tl.arange(0, SPLIT_P2)
    x_next = _coop_load(x_ptr, tl.program_id(0), SPLIT, n_groups_total, group_size, hw, runs, rows_per_group,
                        ROWS, RUN, EXACT)
    tag = _launch_tag(ticket_ptr)  # after the first load: its round trip overlaps it
    for task in range(tl.program_id(0), n_tasks, step):
        grp = task // SPLIT
        # the group's first value, every peer's shift (issued early: an L2 hit after the first)
        k = tl.load(x_ptr + tl.cast(grp, tl.int64) * group_size).to(tl.float32)
        x_raw = x_next
        _, mask, _ = _coop_chunk(task, SPLIT, n_groups_total, group_size, hw, runs, rows_per_group, ROWS, RUN)
        x = x_raw.to(tl.float32)
        # publish this chunk's sums of x - k and (x - k)^2 (the apply works on x - k too: one copy of the
        # chunk stays live, not two); wait for the group's other chunks
        x = _shifted(x, mask, k, EXACT)
        flat = tl.reshape(x, [ROWS * RUN], can_reorder=True)  # what axis=None does (the interpreter can't)
        s_c, q_c = tl.reduce((flat, flat * flat), 0, _add2)
        _publish_tagged(part_ptr + task, s_c, q_c, tag)
        # the next chunk's load is in flight while this program polls (x is read-only)
        x_next = _coop_load(x_ptr, task + step, SPLIT, n_groups_total, group_size, hw, runs, rows_per_group,
                            ROWS, RUN, EXACT)
        ready, s, q = _wait_sums(part_ptr + grp * SPLIT, parts, tag, max_spin, SPLIT)
        if ready:  # the mean of x - k (what the apply works on), M2 = q - s^2 / n
            mean = s / group_size
            m2 = tl.maximum(q - s * mean, 0.0)
        else:  # a peer is not running: read the whole group (correct, slower; never a hang)
            mean, m2 = _group_stats(x_ptr + tl.cast(grp, tl.int64) * group_size, group_size, 2048, "")
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


def _run_length(hw: int, chunk: int) -> int:
    """Contiguous values per tile row: the power of 2 (at least 64 where the chunk allows) that wastes the
    fewest masked lanes when a plane is cut into runs, the longer on a tie (3136 = 49 x 64 -> 64)."""
    top = min(chunk, triton.next_power_of_2(hw))
    candidates = [top >> k for k in range(top.bit_length()) if top >> k >= min(64, top)]
    return min(candidates, key=lambda run: (triton.cdiv(hw, run) * run, -run))


def _group_norm_coop(x, w, b, y, num_groups: int, eps: float):
    n, c = x.shape[0], x.shape[1]
    hw = x.numel() // (n * c)
    cpg = c // num_groups
    group_size = cpg * hw
    total = n * num_groups
    t = TUNABLES
    chunk = min(t["COOP_CHUNK"], triton.next_power_of_2(group_size))
    run = _run_length(hw, chunk)
    runs = triton.cdiv(hw, run)
    rows = chunk // run
    split = triton.cdiv(cpg * runs, rows)
    grid, maxnreg = _coop_launch(split, total, t["num_warps_coop"], t["COOP_PROGRAMS_PER_SM"], x.device)
    exact = t["COOP_UNMASKED"] and hw % run == 0 and (cpg * runs) % rows == 0  # chunks tile every group
    ticket, part = _epoch_words(x.device, grid[0], total * split, ("groupnorm",))  # a word a chunk
    max_spin = _MAX_SPIN_GPU if x.is_cuda else 0  # the interpreter runs programs one after another
    _groupnorm_coop_kernel[grid](
        x, w, b, y, part, ticket, total, group_size, hw, cpg, num_groups, runs, eps, max_spin,
        SPLIT=split, SPLIT_P2=triton.next_power_of_2(split), ROWS=rows, RUN=run, EXACT=exact,
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
    if group_size > t["MAX_FUSED_N"]:
        _group_norm_coop(x, w, b, y, num_groups, eps)
    else:  # the padded [C/G, HW] tile is at most twice the group's next power of 2, so it always fits
        gpp = t["GROUPS_PER_PROG"]
        _groupnorm_fused2d_kernel[(triton.cdiv(total, gpp),)](
            x, w, b, y, total, group_size, hw, cpg, num_groups, eps,
            GPP=gpp, BLOCK_C=triton.next_power_of_2(cpg), BLOCK_HW=triton.next_power_of_2(hw),
            num_warps=t["num_warps_2d"],
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
