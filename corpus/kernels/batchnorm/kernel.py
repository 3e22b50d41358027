"""Batch norm in training mode over (N, C, *spatial): batch statistics per channel, affine, and the
running-statistics update that nn.BatchNorm2d makes in training (momentum, unbiased variance).

Two kernels, because every channel's statistics need all of its N * HW elements before any output:
- _batchnorm_stats_kernel, grid C * SPLIT: program (c, s) reads planes n = s, s + SPLIT, ... of
  channel c and writes its (count, mean, M2) (Chan's merge over blocks: no sum-of-squares cancellation).
- _batchnorm_apply_kernel, grid C * N * blocks: merges the SPLIT partials of its channel (a few
  hundred bytes, L2-resident), writes y = (x - mean) * rstd * w + b; the first program of a channel
  also updates running_mean / running_var (and channel 0's, num_batches_tracked).
STRATEGY "auto" (the default) takes "streamed" (below) for x larger than L2 and "two_kernel" otherwise.
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
STRATEGY "staged" reads x once without holding it in registers: one persistent kernel (all programs
resident) walks the channels in stages of STAGE_BYTES. A stage's rows (runs of RUN contiguous values, in
channel-major order) are split evenly over the programs, so a share meets one or two channels and every tile
is one channel (one shift and one scale per tile, no per-row gathers). In step p every program reads its
share of stage p (evict_last) and, per channel it meets, publishes the sums of x - K and (x - K)^2 (K: the
channel's first value, the same for every program) as one 64-bit word in its own slot: the word is its own
ready flag (the -1 fill is "not in"), so no counter, no atomic contention and no release fence (which would
wait for the program's outstanding y stores). It then applies stage p - LAG: per channel it polls only the
words of the few programs whose shares meet that channel (long in: they were written a step ago), reduces
them in registers and writes y from x re-read from L2 (evict_first). DRAM traffic is x once and y once; L2
holds about LAG + 1 stages of x. A program that polls max_spin times (the interpreter runs programs one by
one) reads the channel itself. The program holding a channel's first row updates its running statistics.
STAGE_PREFETCH pipelines the steps: the first tile of the program's share of stage p + 1 (its rows may meet several
channels: row sums first, then per channel) is loaded in step p before the poll and apply of stage p - LAG, so
DRAM is busy during the wait; 2 also re-reads each applied channel's first tile from L2 before polling for it.
STRATEGY "streamed" reads x once with no step-long latency chain: the channel-major order of TILE-value tiles (a
tile is a block of one plane, so one channel: one shift and one scale) is cut into shares of SHARE tiles, share j
belonging to program j % programs in step j // programs (a stage is a step's shares, STREAM_BYTES of x). Each step
is ONE loop over SHARE tiles: iteration i loads tile i of the program's share of stage p from DRAM and adds it
to per-lane sums of x - K, and loads tile i of its share of stage p - LAG from L2 and writes its y. Where the
share's run in a channel ends, the lane sums are reduced and published as one tagged word (slot: share, channel
within it); where the applied tile's channel changes, the program polls that channel's words (all written a
step or more before: normally no wait) and keeps its scale and shift. Stages need not align with channels; LAG is raised so
a channel is all read one step before it is applied (a program never waits for its own reads). The loop's loads
run ahead through tl.range num_stages (cp.async into shared memory, which drops the eviction hints) or
STREAM_AHEAD (the next tiles loaded into registers a tile early). STREAM_PLANES makes a tile [PLANES, TILE]: the
same block of PLANES planes of one channel (C * HW apart), so 16-bit x moves as many bytes per tile (and per
register prefetch) as 32-bit x with one scale and shift; the last group is masked where PLANES does not divide N.
Polling out, the running statistics (the program applying a channel's first tile) and K are as in "staged".
STREAM_AHEAD 2 keeps two tiles' loads in flight in registers; STREAM_LANES cuts a tile's block of a plane into rows
of LANES values summed within each thread first, so the per-lane sums take fewer registers (room for more programs
per SM or the deeper prefetch under maxnreg).
STREAM_WORDS (bf16 planes of even length) loads and stores tiles as 32-bit words of two values: low = word << 16,
high = word & 0xFFFF0000, y packed by one cvt.rn.bf16x2 a word, so a prefetched tile takes half the registers (Triton
otherwise splits it into 16-bit halves; 5 programs would fit an SM, 4 run faster). STREAM_UNMASKED (tiles that
never cut a plane or N) loads without masks: a tile outside the tensor loads its nearest real tile (the sums of the dead tiles after a
program's last read are never published; the apply's store keeps the tile's one flag), so no zeroing of the load
registers. STREAM_ONE_TREE reduces a publish's two per-lane sums, and each poll's (sum, sum of squares, words not in),
in one reduction tree: one barrier pair each instead of two and three.
WORKSPACE "epoch" (staged, streamed) drops the fill kernel before each launch: the slot words live in a workspace
cached per (layout, stream), and each launch ORs its parity (one ticket atomic per program) into bit 63 of its
words; a poll XORs it back, so the words the launch before left, and the -1 they start as, read as not in.
STRATEGY "ring" (Gluon, a CUDA GPU) is "streamed" with each program's tiles held in a shared-memory ring of
RING_LAG x SHARE tiles between their statistics and their apply: the tile read in iteration t is stored into slot
t % RING by the threads that loaded it, and iteration t + RING (which applies that tile: it is the program's own,
LAG steps back) loads it back in the same layout, so no re-read from L2, no misses to DRAM, and L2 carries x once
and y once, as a copy does. Tiles are [ROWS, LANES] with each thread holding its 16-byte column strip of every row
(per-lane sums without shuffles); the words, polls, K, epoch workspace and running statistics are the streamed
kernel's; a poll that runs out reads the channel from x.
STRATEGY "two_kernel": bytes moved: x is read twice and y written once (1.5x the minimum) once the tensor is larger than L2.
The stats kernel walks channels from last to first and the apply kernel from first to last, so the
channels read last by the first kernel are still in L2 when the second starts.
"""

import torch
import triton
import triton.language as tl
from torch import nn

try:  # Gluon (triton >= 3.5: explicit shared memory) for STRATEGY "ring"; without it the Triton strategies run
    from triton.experimental import gluon
    from triton.experimental.gluon import language as gl
except ImportError:  # pragma: no cover - older triton
    gluon = None

TUNABLES = {
    "SPLIT": 64,  # programs per channel in the stats kernel
    "BLOCK_STATS": 4096,
    "num_warps_stats": 8,
    "MAX_BLOCK_APPLY": 4096,  # apply kernel: elements of one plane per program
    "num_warps_apply": 8,
    # "two_kernel" (stats, then apply: x read twice), "coop", "staged" or "streamed" (x read once), or "auto":
    # streamed for x larger than L2 (bf16 256x128x64x64: 0.1708 ms with 2-plane tiles against staged's 0.1894 and
    # two_kernel's 0.2313; fp32 64x256x56x56: 0.1276 against two_kernel's 0.1626, staged 0.27-0.58), else
    # two_kernel: benchmarks/results/sweep-20261130T225732Z.json, sweep-20261130T224140Z.json,
    # sweep-20261130T174447Z.json. "ring" (Gluon, below) now takes those sizes on sm_90 where its launch fits and
    # its tiles are at least 3/4 filled by the planes; streamed elsewhere
    "STRATEGY": "auto",
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
    "STAGE_BYTES": 16777216,  # staged: bytes of x per stage at most (whole channels, at least one): about two
    #                          stages of x and one of y are live in L2 at once
    "STAGE_TILE": 32768,  # staged: values per tile (ROWS x RUN, power of 2) a program loads at once
    "STAGE_RUN": 4096,  # staged: contiguous values per tile row at most (power of 2). Stages are split over the
    #                     programs in rows, so short rows even out the shares; long rows cost fewer
    #                     instructions per value (per-row index math, row sums, per-row scale and shift)
    "num_warps_staged": 4,
    "STAGE_PROGRAMS_PER_SM": 2,  # staged: persistent programs per SM (all resident: they wait on each other)
    "STAGE_LAG": 1,  # staged: the step that reads stage p writes y of stage p - LAG
    "STAGE_EVICT": True,  # staged: evict_last on the DRAM reads, evict_first on the apply's re-reads and y stores
    "STAGE_PREFETCH": 0,  # staged: 1 = the first tile of the next stage's share is loaded before this step's poll
    #                       and apply (DRAM stays busy while waiting), 2 = also each channel's first apply tile
    #                       is re-read from L2 before its poll
    "STREAM_BYTES": 12582912,  # streamed: bytes of x per stage (about LAG + 1 stages stay in L2)
    "STREAM_TILE": 4096,  # streamed: values per tile and plane (power of 2, a block of one plane: one channel)
    # streamed defaults: the fp32 best of sweep-20261130T224140Z.json (register prefetch 0.1257 ms; cp.async
    # STAGES 3 0.1577, STAGES 1 without AHEAD 0.1814)
    "STREAM_STAGES": 1,  # streamed: tl.range num_stages of the tile loop (cp.async loads of STAGES - 1 tiles ahead
    #                      in flight through shared memory; they drop the eviction hints)
    "STREAM_AHEAD": True,  # streamed: the next tiles' loads are issued into registers a tile ahead (use STAGES 1);
    #                        2: two tiles ahead (twice the bytes in flight per program, twice the registers)
    "STREAM_LANES": 0,  # streamed: per-lane sums kept over LANES values (power of 2 dividing the tile's block of a
    #                     plane; 0 = 2 KiB of values: bf16 1024, fp32 512): a tile is summed over rows of LANES
    #                     first (within each thread), so fewer accumulator registers and more programs fit an SM
    #                     (bf16 [1, 4096] tiles at 4 programs/SM 0.1649 against 0.4750 ms at 512 lanes;
    #                     fp32 at 3/SM 0.1216 against 0.1339 at 256: sweep-20261201T015538Z.json)
    # streamed: planes of a channel per tile (power of 2): [PLANES, TILE] values, one scale; 0 = as many as make a
    # 16 KiB tile. 1: bf16 tiles of 8 KiB, which with 2 KiB lanes fit 4 programs an SM (0.1649 ms against 0.1705 for
    # 2 planes at 2/SM; sweep-20261201T015538Z.json); fp32 4096-value blocks are 1 plane either way
    "STREAM_PLANES": 1,
    "num_warps_streamed": 4,
    # streamed: persistent programs per SM (all resident: they wait on each other); 0 = by the tile's bytes: 4 for
    # tiles of 8 KiB or less, else 3 (what 128 / 168 registers a thread hold without spilling: bf16 0.1649 at 4
    # against 0.1723 at 3; fp32 16 KiB tiles 0.1216 at 3, 2/SM 0.1273: sweep-20261201T015332Z/-015538Z.json);
    # bf16 words fit 5 but run best at 4 (0.1509 against 0.1567 at 5, 0.2818 at 6, 8 warps x 3 0.4537:
    # sweep-20261201T044106Z.json)
    "STREAM_PROGRAMS_PER_SM": 0,
    # staged, streamed: "fill" (the slot words -1-filled before every launch: a fill kernel) or "epoch" (a
    # workspace cached per stream, never refilled: each launch tags its words with its parity, drawn by one ticket
    # atomic per program): bf16 0.1629-0.1630 against 0.1649-0.1650 ms, fp32 0.1194-0.1202 against 0.1215-0.1216
    # (sweep-20261201T015538Z.json)
    "WORKSPACE": "epoch",
    "STREAM_LAG": 2,  # streamed: the step reading stage p writes y of stage p - LAG (raised where a channel
    #                   spans more stages, so a program never waits for its own later reads)
    # streamed, bf16 with an even plane: tiles loaded and stored as 32-bit words of two values (low = word << 16,
    # high = word & 0xFFFF0000, y packed by one cvt.rn.bf16x2 a word): half the registers for a prefetched tile
    # (no split into 16-bit halves) and one integer op a value instead of 1.5. With UNMASKED and ONE_TREE at 4/SM:
    # bf16 0.1509 ms against 0.1636 without the three (words alone 0.1597, unmasked + one tree alone 0.1527;
    # sweep-20261201T044106Z.json); other dtypes and odd planes load values
    "STREAM_WORDS": True,
    # streamed, tiles that never cut a plane or N: loads without masks (a tile outside the tensor loads its nearest
    # real tile; only the stores keep the tile's one flag), so no zeroing of the load registers (bf16 words masked
    # 0.1572 at 5/SM against 0.1567 unmasked: sweep-20261201T044106Z.json); ragged tiles stay masked
    "STREAM_UNMASKED": True,
    # streamed: a share's publish reduces its two per-lane sums in one tree, and each poll of a channel's words
    # reduces (sum, sum of squares, words not in) in one tree: one barrier pair each instead of two and three
    # (fp32 0.1164 against 0.1176 ms: sweep-20261201T044106Z.json)
    "STREAM_ONE_TREE": True,
    # streamed: the L2 eviction policies of the tile read from DRAM, of its re-read by the apply and of y's store
    # ("" = normal): the read kept (evict_last) for the re-read LAG steps later, the re-read and y let go first;
    # every other choice is slower (bf16 0.1563-0.1885 ms against 0.1495, fp32 0.1188-0.1494 against 0.1155:
    # sweep-20261202T075423Z.json)
    # (three comma-separated names; a list of three also does, as sweep grids give them)
    "STREAM_EVICT": "evict_last,evict_first,evict_first",
    # "ring" (a CUDA GPU with Gluon): "streamed" with each program's tiles held in a shared-memory ring between
    # their statistics and their apply, so L2 carries x once and y once. Tiles of RING_TILE values (power of 2, a
    # block of one plane, at most the plane's next power of 2), shares of RING_SHARE_BYTES of x a program and step
    # (whole tiles, at least one), the apply RING_LAG steps behind the reads (the ring holds LAG x SHARE tiles),
    # RING_PROGRAMS_PER_SM persistent programs (0: 5 for tiles of 8 KiB or less, else 4), the DRAM reads with
    # RING_EVICT. bf16 256x128x64x64 0.1389 ms (91% of 4.25 TB/s) at 5 an SM against streamed's 0.1505, fp32
    # 64x256x56x56 0.1113 (87%) at 4 an SM with one-tile shares against 0.1155; evict_last reads beat normal
    # (0.1449 / 0.1505) and evict_first (0.1578) though nothing re-reads them
    # (gluon-batchnorm-ring-probe-h200-20261202T080046Z.json, -r2-20261202T080133Z.json)
    "RING_TILE": 4096,
    "RING_SHARE_BYTES": 16384,
    "RING_LAG": 2,
    "RING_PROGRAMS_PER_SM": 0,
    "RING_EVICT": "evict_last",
    "num_warps_ring": 4,
    # "ring": a repeat call of one problem relaunches the kernel the first call compiled (see _RingPlan)
    "RING_LAUNCH_PLANS": True,
}
# what a ring launch plan depends on besides the tensors (a change of any makes a new plan)
_RING_PLAN_TUNABLES = ("STRATEGY", "RING_TILE", "RING_SHARE_BYTES", "RING_LAG", "RING_PROGRAMS_PER_SM", "RING_EVICT",
                       "num_warps_ring", "WORKSPACE")
_RING_PLANS: dict = {}  # _ring_key -> _RingPlan
_MAX_RING_PLANS = 32
_AUTO_STREAMED_MIN_BYTES = 64 << 20  # "auto": below this x stays in L2, where two_kernel's second read is cheap
_STREAM_TILE_BYTES = 16384  # streamed, STREAM_PLANES 0: bytes of x a tile moves
_STREAM_LANE_BYTES = 2048  # streamed, STREAM_LANES 0: bytes of x a lane row holds
#                                    (staged and streamed above it)
_MAX_WORKSPACES = 32  # "epoch": cached workspaces kept (cleared past this)
_WORKSPACES: dict = {}  # "epoch": (layout, device, stream) -> int64 [ticket counter, slot words...]
_MAX_SPIN_GPU = 50_000  # coop, staged, streamed: polls (~1 us each) before a program computes the stats itself
_SHARED_BYTES_PER_SM = 227 * 1024  # H100/H200: what one SM's resident programs may use together
_EVICT_POLICIES = ("", "evict_first", "evict_last")  # what tl.load / tl.store take ("" = normal)
_RING_SCRATCH_BYTES = 1024  # "ring": shared memory a program takes beside its ring (reduction scratch)
_CAPABILITY: dict = {}  # device -> (major, minor)
_SM_COUNT: dict = {}  # device -> SMs


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
            _update_running(run_mean_ptr, run_var_ptr, batches_ptr, c, count, mean, m2, momentum)


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
def _publish_tagged(slot_ptr, mean_c, m2_c, tag):
    """(mean, M2), (mean, rstd) or (shifted sum, sum of squares): two floats, the high one never negative, as
    one 64-bit word (the high float's sign bit cleared, then set to the launch's tag bit): a reader sees all
    of it or the -1 fill, so no counter and no release fence (which would first wait for this program's
    outstanding y stores)."""
    lo = mean_c.to(tl.int32, bitcast=True).to(tl.int64) & 0xFFFFFFFF
    hi = (m2_c.to(tl.int32, bitcast=True) & 0x7FFFFFFF).to(tl.int64)
    tl.atomic_xchg(slot_ptr, (hi << 32) | lo | tag, sem="relaxed")


@triton.jit
def _poll_tagged(ptrs, mask, max_spin, tag):
    """The (low, high) float pairs of the 64-bit words at ptrs (where mask; 0.0 elsewhere), polled until all are
    published by this launch or max_spin polls; and whether all were. XOR with the launch's tag: a word of this
    launch reads >= 0, the -1 fill or a word of the launch before (the other tag) < 0. Only a word not yet in
    costs a second poll: the first load usually finds them all."""
    words = tl.load(ptrs, mask=mask, other=tag, volatile=True) ^ tag
    spins = 0
    while (tl.min(words, axis=0) < 0) & (spins < max_spin):
        words = tl.load(ptrs, mask=mask, other=tag, volatile=True) ^ tag
        spins += 1
    low = (words & 0xFFFFFFFF).to(tl.int32).to(tl.float32, bitcast=True)
    high = (words >> 32).to(tl.int32).to(tl.float32, bitcast=True)
    return tl.min(words, axis=0) >= 0, low, high


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
            _publish_tagged(part_ptr + task, mean_c, m2_c, 0)
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
                _publish_tagged(word_ptr + c, mean, rstd, 0)  # rstd > 0: the sign-bit clear is a no-op
                if UPDATE_RUNNING:
                    _update_running(run_mean_ptr, run_var_ptr, batches_ptr, c, count, mean, m2, momentum)
            else:
                ready, mean, rstd = _wait_word(word_ptr + c, max_spin)
                if not ready:  # the last arriver is not running yet: read the whole channel (never a hang)
                    count, mean, m2 = _channel_stats(x_ptr, c, n_batch, n_channels, hw, 1024)
                    rstd = tl.rsqrt(m2 / count + eps)
        else:
            if SYNC == "tagged":
                ready, p_mean, p_m2 = _poll_tagged(part_ptr + c * SPLIT + parts, parts < SPLIT, max_spin, 0)
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


@triton.jit
def _stage_share(stage, stage_channels, n_channels, rows_per_channel):
    """The stage's channel count and this program's rows [lo, hi) of it: the stage's rows in channel-major
    order (channel, sample, run of the plane) split evenly (to a row) over all programs, so a share meets one
    or two channels (more only when there are fewer programs than channels)."""
    sc = tl.minimum(n_channels - stage * stage_channels, stage_channels)
    total = tl.cast(rows_per_channel, tl.int64) * sc
    g = tl.program_id(0)
    n_programs = tl.num_programs(0)
    return sc, (g * total // n_programs).to(tl.int32), ((g + 1) * total // n_programs).to(tl.int32)


@triton.jit
def _share_channels(lo, hi, rows_per_channel):
    """The stage's local channels [first, end) that rows [lo, hi) meet (none for an empty share)."""
    first = lo // rows_per_channel
    return first, tl.where(hi > lo, (hi - 1) // rows_per_channel + 1, first)


@triton.jit
def _channel_tile(c, r0, r_end, n_channels, hw, SEGS: tl.constexpr, ROWS: tl.constexpr, RUN: tl.constexpr,
                  EVEN: tl.constexpr):
    """Offsets and mask of rows r0 ... r0 + ROWS (those before r_end) of channel c: row r is run r % SEGS of
    plane (r // SEGS, c), RUN contiguous values (16-byte accesses). The whole tile is one channel: one shift,
    one scale, no per-row gathers."""
    r = r0 + tl.arange(0, ROWS)
    n = r // SEGS  # a constant divisor: a multiply-high
    cols = ((r - n * SEGS) * RUN)[:, None] + tl.arange(0, RUN)[None, :]
    offs = (n.to(tl.int64) * n_channels + c)[:, None] * hw + cols
    if EVEN:  # RUN divides the plane: the mask is per row (keeps the loads vectorised)
        mask = tl.broadcast_to((r < r_end)[:, None], (ROWS, RUN))
    else:
        mask = (r < r_end)[:, None] & (cols < hw)
    return offs, mask


@triton.jit
def _shifted_sums(x_ptr, c, k, r_start, r_end, n_channels, hw, SEGS: tl.constexpr, ROWS: tl.constexpr,
                  RUN: tl.constexpr, EVEN: tl.constexpr, EVICT: tl.constexpr):
    """The sums of x - k and (x - k)^2 over rows [r_start, r_end) of channel c, a tile at a time."""
    s = 0.0
    q = 0.0
    for r0 in range(r_start, r_end, ROWS):
        offs, mask = _channel_tile(c, r0, r_end, n_channels, hw, SEGS, ROWS, RUN, EVEN)
        # lanes that are off read K: they add exactly 0 (no select after the load)
        x = tl.load(x_ptr + offs, mask=mask, other=k, eviction_policy="evict_last" if EVICT else "")
        d = x.to(tl.float32) - k.to(tl.float32)
        # across rows first: mostly adds within a thread, one row sum per column (few shuffles)
        s += tl.sum(tl.sum(d, axis=0), axis=0)
        q += tl.sum(tl.sum(d * d, axis=0), axis=0)
    return s, q


@triton.jit
def _stage_read(x_ptr, slot_ptr, tag, stage, stage_channels, n_channels, hw, rows_per_channel, SEGS: tl.constexpr,
                ROWS: tl.constexpr, RUN: tl.constexpr, EVEN: tl.constexpr, EVICT: tl.constexpr):
    """Reads this program's share of the stage from DRAM (evict_last: the apply re-reads it from L2) and, per
    channel it meets, publishes the sums of x - K and (x - K)^2 as one tagged word. K is the channel's first
    value, the same for every program, so the sums add up and the sum of squares does not cancel."""
    _, lo, hi = _stage_share(stage, stage_channels, n_channels, rows_per_channel)
    first, end = _share_channels(lo, hi, rows_per_channel)
    for cl in range(first, end):
        c = stage * stage_channels + cl
        k = tl.load(x_ptr + tl.cast(c, tl.int64) * hw)
        base = cl * rows_per_channel
        r_end = tl.minimum(hi - base, rows_per_channel)
        s, q = _shifted_sums(x_ptr, c, k, tl.maximum(lo - base, 0), r_end, n_channels, hw, SEGS, ROWS, RUN, EVEN,
                             EVICT)
        _publish_tagged(slot_ptr + c * tl.num_programs(0) + tl.program_id(0), s, q, tag)


@triton.jit
def _share_rows(stage, n_stages, lo, hi, stage_channels, n_channels, hw, rows_per_channel,
                SEGS: tl.constexpr, ROWS: tl.constexpr, RUN: tl.constexpr, EVEN: tl.constexpr):
    """Offsets and mask of the first ROWS rows of a share (stage rows lo ... hi, channel-major: they may meet
    two channels), each row's local channel and whether the row is in (none past the last stage)."""
    i = tl.arange(0, ROWS)
    r = lo + i
    valid = i < tl.where(stage < n_stages, hi - lo, 0)
    cl = r // rows_per_channel
    rr = r - cl * rows_per_channel
    n = rr // SEGS
    cols = ((rr - n * SEGS) * RUN)[:, None] + tl.arange(0, RUN)[None, :]
    offs = (n.to(tl.int64) * n_channels + stage * stage_channels + cl)[:, None] * hw + cols
    if EVEN:
        mask = tl.broadcast_to(valid[:, None], (ROWS, RUN))
    else:
        mask = valid[:, None] & (cols < hw)
    return offs, mask, cl, valid


@triton.jit
def _share_head(x_ptr, stage, n_stages, stage_channels, n_channels, hw, rows_per_channel, SEGS: tl.constexpr,
                ROWS: tl.constexpr, RUN: tl.constexpr, EVEN: tl.constexpr, EVICT: tl.constexpr):
    """The first ROWS rows of this program's share of the stage and each row's K, loaded a step ahead (all off
    past the last stage). Off lanes read 0, not K: other=K would hold the tile's loads until K's load is back."""
    _, lo, hi = _stage_share(stage, stage_channels, n_channels, rows_per_channel)
    offs, mask, cl, valid = _share_rows(stage, n_stages, lo, hi, stage_channels, n_channels, hw,
                                        rows_per_channel, SEGS, ROWS, RUN, EVEN)
    k = tl.load(x_ptr + (stage * stage_channels + cl).to(tl.int64) * hw, mask=valid, other=0.0)
    x = tl.load(x_ptr + offs, mask=mask, other=0.0, eviction_policy="evict_last" if EVICT else "")
    return x, k


@triton.jit
def _stage_read_ahead(x_ptr, slot_ptr, tag, stage, n_stages, x_head, k_head, stage_channels, n_channels, hw,
                      rows_per_channel, SEGS: tl.constexpr, ROWS: tl.constexpr, RUN: tl.constexpr,
                      EVEN: tl.constexpr, EVICT: tl.constexpr):
    """_stage_read with the share's first ROWS rows already in registers (x_head, k_head from _share_head): row
    sums first (a row is one channel), then per channel the sum of its rows and of its remaining tiles."""
    _, lo, hi = _stage_share(stage, stage_channels, n_channels, rows_per_channel)
    first, end = _share_channels(lo, hi, rows_per_channel)
    _, mask, row_cl, valid = _share_rows(stage, n_stages, lo, hi, stage_channels, n_channels, hw,
                                         rows_per_channel, SEGS, ROWS, RUN, EVEN)
    d = x_head.to(tl.float32) - k_head.to(tl.float32)[:, None]
    if not EVEN:  # lanes past the plane's end (EVEN: only whole rows are off, dropped with their row sums)
        d = tl.where(mask, d, 0.0)
    s_row = tl.where(valid, tl.sum(d, axis=1), 0.0)
    q_row = tl.where(valid, tl.sum(d * d, axis=1), 0.0)
    for cl in range(first, end):
        c = stage * stage_channels + cl
        k = tl.load(x_ptr + tl.cast(c, tl.int64) * hw)
        base = cl * rows_per_channel
        r_end = tl.minimum(hi - base, rows_per_channel)
        s = tl.sum(tl.where(row_cl == cl, s_row, 0.0), axis=0)
        q = tl.sum(tl.where(row_cl == cl, q_row, 0.0), axis=0)
        # rows past the head: loaded now
        s_rest, q_rest = _shifted_sums(x_ptr, c, k, tl.maximum(lo + ROWS - base, 0), r_end, n_channels, hw, SEGS,
                                       ROWS, RUN, EVEN, EVICT)
        s += s_rest
        q += q_rest
        _publish_tagged(slot_ptr + c * tl.num_programs(0) + tl.program_id(0), s, q, tag)


@triton.jit
def _polled_stats(x_ptr, word_ptrs, tag, meets, c, n_batch, n_channels, hw, count, max_spin):
    """(mean, var) of channel c from the shifted-sum words at word_ptrs (lanes where meets), polled until all are
    in; after max_spin polls (a program not started, e.g. in the interpreter) read from x."""
    k = tl.load(x_ptr + tl.cast(c, tl.int64) * hw).to(tl.float32)  # issued before polling: not in its wake
    ready, s_p, q_p = _poll_tagged(word_ptrs, meets, max_spin, tag)
    return _stats_or_read(ready, k, tl.sum(s_p, axis=0), tl.sum(q_p, axis=0), x_ptr, c, n_batch, n_channels, hw,
                          count)


@triton.jit
def _stats_or_read(ready, k, s, q, x_ptr, c, n_batch, n_channels, hw, count):
    """(mean, var) of channel c from its sums of x - k and (x - k)^2 when all were in, else read from x."""
    if ready:
        d = s / count
        mean = k + d
        var = tl.maximum(q / count - d * d, 0.0)
    else:
        n_c, mean, m2 = _channel_stats(x_ptr, c, n_batch, n_channels, hw, 1024)
        var = m2 / n_c
    return mean, var


@triton.jit
def _add2(a0, a1, b0, b1):
    return a0 + b0, a1 + b1


@triton.jit
def _add3(a0, a1, a2, b0, b1, b2):
    return a0 + b0, a1 + b1, a2 + b2


@triton.jit
def _tagged_sums(ptrs, mask, tag):
    """The sums of the (low, high) floats of the tagged words at ptrs (where mask) and how many are not in yet
    (see _poll_tagged), as one reduction tree: one barrier pair a poll instead of one for a min and each sum."""
    words = tl.load(ptrs, mask=mask, other=tag, volatile=True) ^ tag
    low = (words & 0xFFFFFFFF).to(tl.int32).to(tl.float32, bitcast=True)
    high = (words >> 32).to(tl.int32).to(tl.float32, bitcast=True)
    return tl.reduce((low, high, (words < 0).to(tl.float32)), 0, _add3)


@triton.jit
def _polled_stats_one_tree(x_ptr, word_ptrs, tag, meets, c, n_batch, n_channels, hw, count, max_spin):
    """_polled_stats with each poll one reduction of (sum, sum of squares, words not in)."""
    k = tl.load(x_ptr + tl.cast(c, tl.int64) * hw).to(tl.float32)  # issued before polling: not in its wake
    s, q, missing = _tagged_sums(word_ptrs, meets, tag)
    spins = 0
    while (missing > 0) & (spins < max_spin):
        s, q, missing = _tagged_sums(word_ptrs, meets, tag)
        spins += 1
    return _stats_or_read(missing == 0, k, s, q, x_ptr, c, n_batch, n_channels, hw, count)


@triton.jit
def _stage_channel_stats(x_ptr, slot_ptr, tag, c, cl, sc, n_batch, n_channels, hw, rows_per_channel, count,
                         max_spin, GW: tl.constexpr):
    """(mean, var) of channel c (local channel cl of a stage of sc): the words of the programs whose shares
    meet it (a window of GW from the one holding its first row), polled until all are in; after max_spin
    polls (a program not started, e.g. in the interpreter) read from x."""
    n_programs = tl.num_programs(0)
    total = tl.cast(rows_per_channel, tl.int64) * sc
    row0 = tl.cast(cl, tl.int64) * rows_per_channel
    g = (((row0 + 1) * n_programs + total - 1) // total - 1).to(tl.int32) + tl.arange(0, GW)
    lo_g = g * total // n_programs
    hi_g = (g + 1) * total // n_programs
    meets = (g < n_programs) & (hi_g > lo_g) & (lo_g < row0 + rows_per_channel) & (hi_g > row0)
    return _polled_stats(x_ptr, slot_ptr + c * n_programs + g, tag, meets, c, n_batch, n_channels, hw, count,
                         max_spin)


@triton.jit
def _stage_apply(x_ptr, w_ptr, b_ptr, y_ptr, slot_ptr, tag, run_mean_ptr, run_var_ptr, batches_ptr, stage,
                 stage_channels, n_batch, n_channels, hw, rows_per_channel, count, eps, momentum, max_spin,
                 SEGS: tl.constexpr, ROWS: tl.constexpr, RUN: tl.constexpr, GW: tl.constexpr, EVEN: tl.constexpr,
                 EVICT: tl.constexpr, UPDATE_RUNNING: tl.constexpr, EARLY: tl.constexpr):
    """y of this program's share of the stage, x re-read from L2 and y streamed out (evict_first), channel by
    channel once its statistics are in; the program holding a channel's first row updates its running stats.
    EARLY: a channel's first tile is re-read before polling (the L2 round trip overlaps the poll)."""
    sc, lo, hi = _stage_share(stage, stage_channels, n_channels, rows_per_channel)
    first, end = _share_channels(lo, hi, rows_per_channel)
    for cl in range(first, end):
        c = stage * stage_channels + cl
        w = tl.load(w_ptr + c).to(tl.float32)  # before the poll (not after it)
        b = tl.load(b_ptr + c).to(tl.float32)
        base = cl * rows_per_channel
        r_start = tl.maximum(lo - base, 0)
        r_end = tl.minimum(hi - base, rows_per_channel)
        if EARLY:
            offs0, mask0 = _channel_tile(c, r_start, r_end, n_channels, hw, SEGS, ROWS, RUN, EVEN)
            x0 = tl.load(x_ptr + offs0, mask=mask0, other=0.0, eviction_policy="evict_first" if EVICT else "")
        mean, var = _stage_channel_stats(x_ptr, slot_ptr, tag, c, cl, sc, n_batch, n_channels, hw, rows_per_channel,
                                         count, max_spin, GW)
        scale = tl.rsqrt(var + eps) * w
        shift = b - mean * scale
        if UPDATE_RUNNING:  # noqa: SIM102 - a constexpr branch around a runtime one
            if lo <= base:
                _update_running(run_mean_ptr, run_var_ptr, batches_ptr, c, count, mean, var * count, momentum)
        if EARLY:
            tl.store(y_ptr + offs0, (x0.to(tl.float32) * scale + shift).to(y_ptr.dtype.element_ty), mask=mask0,
                     eviction_policy="evict_first" if EVICT else "")
            r_start += ROWS
        for r0 in range(r_start, r_end, ROWS):
            offs, mask = _channel_tile(c, r0, r_end, n_channels, hw, SEGS, ROWS, RUN, EVEN)
            x = tl.load(x_ptr + offs, mask=mask, other=0.0, eviction_policy="evict_first" if EVICT else "")
            tl.store(y_ptr + offs, (x.to(tl.float32) * scale + shift).to(y_ptr.dtype.element_ty), mask=mask,
                     eviction_policy="evict_first" if EVICT else "")


@triton.jit
def _batchnorm_staged_kernel(
    x_ptr, w_ptr, b_ptr, y_ptr, slot_ptr, ticket_ptr, run_mean_ptr, run_var_ptr, batches_ptr,
    n_batch, n_channels, hw, n_stages, stage_channels, rows_per_channel, count, eps, momentum, max_spin,
    SEGS: tl.constexpr, ROWS: tl.constexpr, RUN: tl.constexpr, GW: tl.constexpr, LAG: tl.constexpr,
    EVEN: tl.constexpr, EVICT: tl.constexpr, UPDATE_RUNNING: tl.constexpr, PREFETCH: tl.constexpr,
    EPOCH: tl.constexpr,
):
    if PREFETCH > 0:
        x_head, k_head = _share_head(x_ptr, 0, n_stages, stage_channels, n_channels, hw, rows_per_channel, SEGS,
                                     ROWS, RUN, EVEN, EVICT)
    tag = _launch_tag(ticket_ptr, EPOCH)  # after the first loads: its round trip overlaps them
    for step in range(n_stages + LAG):
        if step < n_stages:
            if PREFETCH > 0:
                _stage_read_ahead(x_ptr, slot_ptr, tag, step, n_stages, x_head, k_head, stage_channels, n_channels, hw,
                                  rows_per_channel, SEGS, ROWS, RUN, EVEN, EVICT)
            else:
                _stage_read(x_ptr, slot_ptr, tag, step, stage_channels, n_channels, hw, rows_per_channel, SEGS, ROWS,
                            RUN, EVEN, EVICT)
        if PREFETCH > 0:  # the next stage's head is in flight from DRAM while this program polls and applies
            x_head, k_head = _share_head(x_ptr, step + 1, n_stages, stage_channels, n_channels, hw,
                                         rows_per_channel, SEGS, ROWS, RUN, EVEN, EVICT)
        if step >= LAG:  # the stage read LAG steps ago (still in L2); its words are long in, so rarely a poll
            _stage_apply(x_ptr, w_ptr, b_ptr, y_ptr, slot_ptr, tag, run_mean_ptr, run_var_ptr, batches_ptr, step - LAG,
                         stage_channels, n_batch, n_channels, hw, rows_per_channel, count, eps, momentum, max_spin,
                         SEGS, ROWS, RUN, GW, EVEN, EVICT, UPDATE_RUNNING, PREFETCH == 2)


@triton.jit
def _stream_tile(u, n_units, n_batch, n_channels, hw, PER_CHANNEL: tl.constexpr, SEGS: tl.constexpr,
                 TILE: tl.constexpr, PLANES: tl.constexpr, LANES: tl.constexpr, UNMASKED: tl.constexpr):
    """Tile u in channel-major order (channel, group of PLANES samples, TILE-value block of the plane): its channel,
    offsets and mask (all off unless 0 <= u < n_units; planes past N off). A tile is one channel, so one shift
    and one scale per tile; its planes are C * HW apart. It is PLANES * TILE / LANES rows of LANES contiguous
    values (a plane's block cut into TILE / LANES rows), so summing over rows leaves LANES per-lane sums.
    UNMASKED (tiles never cut a plane or N): the offsets are those of the nearest real tile, so loads need no
    mask (no zeroing of the destination registers, no per-vector compares); the mask is the tile's one flag."""
    live = (u >= 0) & (u < n_units)
    if UNMASKED:
        u = tl.minimum(u, n_units - 1)
    u = tl.maximum(u, 0)  # the columns of a tile before the first are >= 0 too: all off below
    c = u // PER_CHANNEL  # constant divisors: multiply-highs
    rest = u - c * PER_CHANNEL
    group = rest // SEGS
    row = tl.arange(0, PLANES * (TILE // LANES))
    plane = row // (TILE // LANES)
    cols = ((rest - group * SEGS) * TILE + (row - plane * (TILE // LANES)) * LANES)[:, None] + tl.arange(0, LANES)
    n = group * PLANES + plane
    offs = (n.to(tl.int64) * n_channels + c)[:, None] * hw + cols
    if UNMASKED:
        return c, offs, tl.zeros(offs.shape, tl.int1) | live
    return c, offs, (n < n_batch)[:, None] & (cols < tl.where(live, hw, 0))


@triton.jit
def _stream_channel_stats(x_ptr, slot_ptr, tag, c, n_shares, words_per_share, n_batch, n_channels, hw, count,
                          max_spin, PER_CHANNEL: tl.constexpr, SHARE: tl.constexpr, GW: tl.constexpr,
                          ONE_TREE: tl.constexpr):
    """(mean, var) of channel c: the words of the shares meeting its tiles, polled until all are in; after
    max_spin polls (a program not started, e.g. in the interpreter) read from x."""
    first = c * PER_CHANNEL
    j = first // SHARE + tl.arange(0, GW)
    meets = (j < n_shares) & (j * SHARE < first + PER_CHANNEL)
    # a share's words are its channels in order: c's is c less the share's first channel
    word_ptrs = slot_ptr + j * words_per_share + c - j * SHARE // PER_CHANNEL
    if ONE_TREE:
        return _polled_stats_one_tree(x_ptr, word_ptrs, tag, meets, c, n_batch, n_channels, hw, count, max_spin)
    return _polled_stats(x_ptr, word_ptrs, tag, meets, c, n_batch, n_channels, hw, count, max_spin)


@triton.jit
def _stream_unit(t, g, SHARE: tl.constexpr):
    """The tile program g reads in iteration t: tile t % SHARE of its share of stage t // SHARE."""
    step = t // SHARE
    return (step * tl.num_programs(0) + g) * SHARE + t - step * SHARE


@triton.jit
def _stream_loads(x_ptr, u, lag_tiles, n_units, n_batch, n_channels, hw, PER_CHANNEL: tl.constexpr,
                  SEGS: tl.constexpr, TILE: tl.constexpr, PLANES: tl.constexpr, LANES: tl.constexpr,
                  UNMASKED: tl.constexpr, EVICT_R: tl.constexpr, EVICT_A: tl.constexpr):
    """Tile u from DRAM (by default evict_last: the apply re-reads it LAG steps later) and tile u - lag_tiles from
    L2 (evict_first: its last use)."""
    x_r = _stream_load(x_ptr, u, n_units, n_batch, n_channels, hw, PER_CHANNEL, SEGS, TILE, PLANES, LANES, UNMASKED,
                       EVICT_R)
    x_a = _stream_load(x_ptr, u - lag_tiles, n_units, n_batch, n_channels, hw, PER_CHANNEL, SEGS, TILE, PLANES, LANES,
                       UNMASKED, EVICT_A)
    return x_r, x_a


@triton.jit
def _stream_load(x_ptr, u, n_units, n_batch, n_channels, hw, PER_CHANNEL: tl.constexpr, SEGS: tl.constexpr,
                 TILE: tl.constexpr, PLANES: tl.constexpr, LANES: tl.constexpr, UNMASKED: tl.constexpr,
                 EVICT: tl.constexpr):
    """Tile u (UNMASKED: a tile outside [0, n_units) loads its nearest real tile instead)."""
    _, offs, mask = _stream_tile(u, n_units, n_batch, n_channels, hw, PER_CHANNEL, SEGS, TILE, PLANES, LANES, UNMASKED)
    if UNMASKED:
        return tl.load(x_ptr + offs, eviction_policy=EVICT)
    return tl.load(x_ptr + offs, mask=mask, other=0.0, eviction_policy=EVICT)


@triton.jit
def _bf16_pair(words):
    """fp32 (low, high) values of 32-bit words holding two bf16 values (little-endian: low = even column)."""
    lo = (words << 16).to(tl.float32, bitcast=True)
    hi = (words & -65536).to(tl.float32, bitcast=True)
    return lo, hi


@triton.jit
def _bf16_word(lo, hi, ASM: tl.constexpr):
    """32-bit words of two bf16 values rounded from fp32 (lo, hi): one packed cvt a word on the GPU (Triton's
    own conversion of separate tensors takes one a value plus a byte permute)."""
    if ASM:  # cvt's first source goes to the upper half
        return tl.inline_asm_elementwise("cvt.rn.bf16x2.f32 $0, $2, $1;", "=r,f,f", [lo, hi], dtype=tl.int32,
                                         is_pure=True, pack=1)
    lo_bits = lo.to(tl.bfloat16).to(tl.int16, bitcast=True).to(tl.int32) & 0xFFFF
    hi_bits = hi.to(tl.bfloat16).to(tl.int16, bitcast=True).to(tl.int32)
    return (hi_bits << 16) | lo_bits


@triton.jit
def _tile_sums(x, k, mask, EVEN: tl.constexpr, WORDS: tl.constexpr):
    """Per-lane sums of x - k and (x - k)^2 over the tile's rows (a lane's rows are in one thread's registers: no
    shuffles). Lanes past the plane's end or N add 0 (EVEN: only whole tiles are off, and their sums are never
    published). WORDS: x is 32-bit words of two bf16 values; a lane sums both."""
    if WORDS:
        lo, hi = _bf16_pair(x)
        d_lo = lo - k
        d_hi = hi - k
        if not EVEN:
            d_lo = tl.where(mask, d_lo, 0.0)
            d_hi = tl.where(mask, d_hi, 0.0)
        s = tl.sum(d_lo, axis=0) + tl.sum(d_hi, axis=0)
        return s, tl.sum(d_lo * d_lo, axis=0) + tl.sum(d_hi * d_hi, axis=0)
    d = x.to(tl.float32) - k
    if not EVEN:
        d = tl.where(mask, d, 0.0)
    return tl.sum(d, axis=0), tl.sum(d * d, axis=0)


@triton.jit
def _lane_totals(acc_s, acc_q, ONE_TREE: tl.constexpr):
    """The sums of the per-lane sums: ONE_TREE reduces both in one tree (one barrier pair, not two)."""
    if ONE_TREE:
        return tl.reduce((acc_s, acc_q), 0, _add2)
    return tl.sum(acc_s, axis=0), tl.sum(acc_q, axis=0)


@triton.jit
def _batchnorm_streamed_kernel(
    x_ptr, xu_ptr, w_ptr, b_ptr, yu_ptr, slot_ptr, ticket_ptr, run_mean_ptr, run_var_ptr, batches_ptr,
    n_batch, n_channels, hw, hw_u, n_units, n_shares, words_per_share, n_steps, count, eps, momentum, max_spin,
    PER_CHANNEL: tl.constexpr, SHARE: tl.constexpr, SEGS: tl.constexpr, TILE: tl.constexpr, PLANES: tl.constexpr,
    LANES: tl.constexpr, GW: tl.constexpr, LAG: tl.constexpr, STAGES: tl.constexpr, AHEAD: tl.constexpr,
    EVEN: tl.constexpr, UPDATE_RUNNING: tl.constexpr, EPOCH: tl.constexpr, WORDS: tl.constexpr,
    UNMASKED: tl.constexpr, ONE_TREE: tl.constexpr, ASM: tl.constexpr, EVICT_R: tl.constexpr, EVICT_A: tl.constexpr,
    EVICT_Y: tl.constexpr,
):
    # Tiles are loaded and stored in units of xu_ptr / yu_ptr: x and y themselves, or with WORDS their 32-bit words
    # of two bf16 values (TILE, LANES and hw_u then count words); K and the fallback read x_ptr's values (hw).
    g = tl.program_id(0)
    per_step = tl.num_programs(0) * SHARE  # tiles of a stage
    lag_tiles = LAG * per_step  # the tile applied is this many before the tile read
    u = g * SHARE  # the first tile this program reads
    k = tl.load(x_ptr + tl.cast(u // PER_CHANNEL, tl.int64) * hw, mask=u < n_units, other=0.0).to(tl.float32)
    if AHEAD > 0:  # the next tiles' loads are in flight in registers while this iteration's are used
        x_r_next, x_a_next = _stream_loads(xu_ptr, u, lag_tiles, n_units, n_batch, n_channels, hw_u, PER_CHANNEL,
                                           SEGS, TILE, PLANES, LANES, UNMASKED, EVICT_R, EVICT_A)
    if AHEAD == 2:  # and the tiles after them
        x_r_far, x_a_far = _stream_loads(xu_ptr, _stream_unit(1, g, SHARE), lag_tiles, n_units, n_batch, n_channels,
                                         hw_u, PER_CHANNEL, SEGS, TILE, PLANES, LANES, UNMASKED, EVICT_R, EVICT_A)
    tag = _launch_tag(ticket_ptr, EPOCH)  # after the first loads: its round trip overlaps them
    acc_s = tl.zeros([LANES], tl.float32)  # per-lane sums of x - K over rows: reduced once per share and channel
    acc_q = tl.zeros([LANES], tl.float32)
    c_apply = -1  # the channel whose scale and shift are held
    scale = 0.0
    shift = 0.0
    for t in tl.range(0, n_steps * SHARE, num_stages=STAGES):
        step = t // SHARE
        i = t - step * SHARE
        # tile i of this program's share of stage `step` (read from DRAM) and of stage step - LAG (applied)
        u = (step * tl.num_programs(0) + g) * SHARE + i
        u_next = tl.where(i + 1 < SHARE, u + 1, u - i + per_step)
        if AHEAD == 2:
            x_r, x_a = x_r_next, x_a_next
            x_r_next, x_a_next = x_r_far, x_a_far
            x_r_far, x_a_far = _stream_loads(xu_ptr, _stream_unit(t + 2, g, SHARE), lag_tiles, n_units, n_batch,
                                             n_channels, hw_u, PER_CHANNEL, SEGS, TILE, PLANES, LANES, UNMASKED,
                                             EVICT_R, EVICT_A)
        elif AHEAD == 1:
            x_r, x_a = x_r_next, x_a_next
            x_r_next, x_a_next = _stream_loads(xu_ptr, u_next, lag_tiles, n_units, n_batch, n_channels, hw_u,
                                               PER_CHANNEL, SEGS, TILE, PLANES, LANES, UNMASKED, EVICT_R, EVICT_A)
        else:
            x_r, x_a = _stream_loads(xu_ptr, u, lag_tiles, n_units, n_batch, n_channels, hw_u, PER_CHANNEL, SEGS, TILE,
                                     PLANES, LANES, UNMASKED, EVICT_R, EVICT_A)
        k_next = tl.load(x_ptr + tl.cast(u_next // PER_CHANNEL, tl.int64) * hw, mask=u_next < n_units, other=0.0)
        # K: the channel's first value, the same in every program, so the shares' sums add up without cancelling
        c_r, _, mask_r = _stream_tile(u, n_units, n_batch, n_channels, hw_u, PER_CHANNEL, SEGS, TILE, PLANES, LANES,
                                      UNMASKED)
        s_t, q_t = _tile_sums(x_r, k, mask_r, EVEN, WORDS)
        acc_s += s_t
        acc_q += q_t
        if (u < n_units) & ((i == SHARE - 1) | (u + 1 == (c_r + 1) * PER_CHANNEL)):  # the share's run in c_r ends
            word = slot_ptr + (step * tl.num_programs(0) + g) * words_per_share + c_r - (u - i) // PER_CHANNEL
            s_c, q_c = _lane_totals(acc_s, acc_q, ONE_TREE)
            _publish_tagged(word, s_c, q_c, tag)
            acc_s = tl.zeros([LANES], tl.float32)
            acc_q = tl.zeros([LANES], tl.float32)
        k = k_next.to(tl.float32)
        u_a = u - lag_tiles
        c_a, offs_a, mask_a = _stream_tile(u_a, n_units, n_batch, n_channels, hw_u, PER_CHANNEL, SEGS, TILE, PLANES,
                                           LANES, UNMASKED)
        if (u_a >= 0) & (u_a < n_units) & (c_a != c_apply):  # read LAG steps ago: its words are normally in
            w = tl.load(w_ptr + c_a).to(tl.float32)
            b = tl.load(b_ptr + c_a).to(tl.float32)
            mean, var = _stream_channel_stats(x_ptr, slot_ptr, tag, c_a, n_shares, words_per_share, n_batch,
                                              n_channels, hw, count, max_spin, PER_CHANNEL, SHARE, GW, ONE_TREE)
            scale = tl.rsqrt(var + eps) * w
            shift = b - mean * scale
            if UPDATE_RUNNING:  # noqa: SIM102 - a constexpr branch around a runtime one
                if u_a == c_a * PER_CHANNEL:  # the program applying the channel's first tile
                    _update_running(run_mean_ptr, run_var_ptr, batches_ptr, c_a, count, mean, var * count, momentum)
            c_apply = c_a
        if WORDS:  # one FMA a value, two values packed into a word by one cvt
            lo, hi = _bf16_pair(x_a)
            y = _bf16_word(lo * scale + shift, hi * scale + shift, ASM)
        else:
            y = (x_a.to(tl.float32) * scale + shift).to(yu_ptr.dtype.element_ty)
        tl.store(yu_ptr + offs_a, y, mask=mask_a, eviction_policy=EVICT_Y)


if gluon is not None:

    @gluon.jit
    def _ring_tile(u, n_units, n_channels, hw, PER_CHANNEL: gl.constexpr, SEGS: gl.constexpr, TILE: gl.constexpr):
        """Tile u in channel-major order (channel, plane, TILE-value block of the plane): (channel, first element,
        first column in the plane, 0 <= u < n_units). A tile outside the tensor gives its nearest real tile's place
        (its loads stay in bounds; its sums are never published, its store is off)."""
        live = (u >= 0) & (u < n_units)
        v = gl.minimum(gl.maximum(u, 0), n_units - 1)
        c = v // PER_CHANNEL
        rest = v - c * PER_CHANNEL
        n = rest // SEGS
        col = (rest - n * SEGS) * TILE
        return c, (n.to(gl.int64) * n_channels + c) * hw + col, col, live

    @gluon.jit
    def _ring_load(x_ptr, base, col, inner, hw, EVEN: gl.constexpr, EVICT: gl.constexpr):
        if EVEN:  # no tile cuts a plane: no masks
            return gl.load(x_ptr + base + inner, eviction_policy=EVICT)
        return gl.load(x_ptr + base + inner, mask=col + inner < hw, other=0.0, eviction_policy=EVICT)

    @gluon.jit
    def _ring_add2(a0, a1, b0, b1):
        return a0 + b0, a1 + b1

    @gluon.jit
    def _ring_add3(a0, a1, a2, b0, b1, b2):
        return a0 + b0, a1 + b1, a2 + b2

    @gluon.jit
    def _ring_tagged_sums(ptrs, mask, tag):
        """(sum of low floats, sum of high floats, words not in) of the tagged words at ptrs: one reduction tree."""
        words = gl.load(ptrs, mask=mask, other=tag, volatile=True) ^ tag
        low = (words & 0xFFFFFFFF).to(gl.int32).to(gl.float32, bitcast=True)
        high = (words >> 32).to(gl.int32).to(gl.float32, bitcast=True)
        return gl.reduce((low, high, (words < 0).to(gl.float32)), 0, _ring_add3)

    @gluon.jit
    def _ring_publish(word_ptr, s, q, tag):
        """_publish_tagged's word: (s, q) with q's sign bit cleared, then set to the launch's tag."""
        lo = s.to(gl.int32, bitcast=True).to(gl.int64) & 0xFFFFFFFF
        hi = (q.to(gl.int32, bitcast=True) & 0x7FFFFFFF).to(gl.int64)
        gl.atomic_xchg(word_ptr, (hi << 32) | lo | tag, sem="relaxed")

    @gluon.jit
    def _ring_sums_from_x(x_ptr, c, k, n_batch, n_channels, hw, num_warps: gl.constexpr):
        """Channel c's sums of x - k and (x - k)^2 read from x: the way out when a peer's word never came."""
        BLOCK: gl.constexpr = 128 * num_warps
        layout: gl.constexpr = gl.BlockedLayout([4], [32], [num_warps], [0])
        offs = gl.arange(0, BLOCK, layout=layout)
        s = gl.zeros([BLOCK], gl.float32, layout)
        q = gl.zeros([BLOCK], gl.float32, layout)
        for n in range(n_batch):
            plane = x_ptr + (n.to(gl.int64) * n_channels + c) * hw
            for start in range(0, hw, BLOCK):
                m = start + offs < hw
                d = gl.where(m, gl.load(plane + start + offs, mask=m, other=0.0).to(gl.float32) - k, 0.0)
                s += d
                q += d * d
        return gl.sum(s, axis=0), gl.sum(q, axis=0)

    @gluon.jit
    def _ring_channel_stats(x_ptr, slot_ptr, tag, c, n_batch, n_channels, hw, n_shares, words_per_share, count,
                            max_spin, PER_CHANNEL: gl.constexpr, SHARE: gl.constexpr, GW: gl.constexpr,
                            num_warps: gl.constexpr):
        """(mean, var) of channel c from the words of the shares meeting it, polled until all are in; after
        max_spin polls (a program not resident) from x itself."""
        layout: gl.constexpr = gl.BlockedLayout([1], [32], [num_warps], [0])
        first = c * PER_CHANNEL
        j = first // SHARE + gl.arange(0, GW, layout=layout)
        meets = (j < n_shares) & (j * SHARE < first + PER_CHANNEL)
        # a share's words are its channels in order: c's is c less the share's first channel
        ptrs = slot_ptr + j * words_per_share + c - j * SHARE // PER_CHANNEL
        k = gl.load(x_ptr + c.to(gl.int64) * hw).to(gl.float32)  # issued before polling: not in its wake
        s, q, missing = _ring_tagged_sums(ptrs, meets, tag)
        spins = 0
        while (missing > 0) & (spins < max_spin):
            s, q, missing = _ring_tagged_sums(ptrs, meets, tag)
            spins += 1
        if missing > 0:
            s, q = _ring_sums_from_x(x_ptr, c, k, n_batch, n_channels, hw, num_warps)
        d = s / count
        return k + d, gl.maximum(q / count - d * d, 0.0)

    @gluon.jit
    def _batchnorm_ring_kernel(
        x_ptr, w_ptr, b_ptr, y_ptr, slot_ptr, ticket_ptr, run_mean_ptr, run_var_ptr, batches_ptr,
        n_batch, n_channels, hw, n_units, n_shares, words_per_share, n_iters, count, eps, momentum, max_spin,
        PER_CHANNEL: gl.constexpr, SHARE: gl.constexpr, SEGS: gl.constexpr, ROWS: gl.constexpr, LANES: gl.constexpr,
        VEC: gl.constexpr, GW: gl.constexpr, LAG: gl.constexpr, EVEN: gl.constexpr, EVICT: gl.constexpr,
        UPDATE_RUNNING: gl.constexpr, EPOCH: gl.constexpr, num_warps: gl.constexpr,
    ):
        # "streamed" with the apply's tile taken from a shared-memory ring instead of re-read from L2: the tile read
        # in iteration t goes to slot t % RING, and iteration t + RING applies it (u - LAG * per_step is this
        # program's tile of RING iterations ago). The same thread stores and loads the same values in one layout.
        TILE: gl.constexpr = ROWS * LANES
        RING: gl.constexpr = LAG * SHARE
        # a thread holds all ROWS of its VEC-wide column strip: per-lane sums over rows need no shuffles
        layout: gl.constexpr = gl.BlockedLayout([ROWS, VEC], [1, 32], [1, num_warps], [1, 0])
        lane_layout: gl.constexpr = gl.SliceLayout(0, layout)
        ring = gl.allocate_shared_memory(x_ptr.dtype.element_ty, [RING, ROWS, LANES],
                                         gl.SwizzledSharedLayout(1, 1, 1, order=[1, 0]))
        inner = gl.expand_dims(gl.arange(0, ROWS, layout=gl.SliceLayout(1, layout)), 1) * LANES + \
            gl.expand_dims(gl.arange(0, LANES, layout=lane_layout), 0)
        g = gl.program_id(0)
        n_programs = gl.num_programs(0)
        per_step = n_programs * SHARE
        lag_tiles = LAG * per_step
        c_n, base_n, col_n, _live0 = _ring_tile(g * SHARE, n_units, n_channels, hw, PER_CHANNEL, SEGS, TILE)
        k = gl.load(x_ptr + c_n.to(gl.int64) * hw).to(gl.float32)  # K: the channel's first value (see streamed)
        x_next = _ring_load(x_ptr, base_n, col_n, inner, hw, EVEN, EVICT)
        ticket = 0
        if EPOCH:  # after the first loads: its round trip overlaps them
            ticket = gl.atomic_add(ticket_ptr, 1, sem="relaxed")
        tag = ((ticket // n_programs) & 1).to(gl.int64) << 63
        acc_s = gl.zeros([LANES], gl.float32, lane_layout)
        acc_q = gl.zeros([LANES], gl.float32, lane_layout)
        c_apply = -1
        scale = 0.0
        shift = 0.0
        for t in range(n_iters):
            step = t // SHARE
            i = t - step * SHARE
            u = (step * n_programs + g) * SHARE + i
            u_next = gl.where(i + 1 < SHARE, u + 1, u - i + per_step)
            x_r = x_next
            c_n, base_n, col_n, _live_next = _ring_tile(u_next, n_units, n_channels, hw, PER_CHANNEL, SEGS, TILE)
            x_next = _ring_load(x_ptr, base_n, col_n, inner, hw, EVEN, EVICT)
            k_next = gl.load(x_ptr + c_n.to(gl.int64) * hw)
            slot = ring.index(t % RING)
            x_a = slot.load(layout)  # the tile read RING iterations ago (before that: never applied)
            slot.store(x_r)
            c_r, _base_r, col_r, live_r = _ring_tile(u, n_units, n_channels, hw, PER_CHANNEL, SEGS, TILE)
            d = x_r.to(gl.float32) - k
            if not EVEN:
                d = gl.where(col_r + inner < hw, d, 0.0)
            acc_s += gl.sum(d, axis=0)
            acc_q += gl.sum(d * d, axis=0)
            if live_r & ((i == SHARE - 1) | (u + 1 == (c_r + 1) * PER_CHANNEL)):  # the share's run in c_r ends
                word = slot_ptr + (step * n_programs + g) * words_per_share + c_r - (u - i) // PER_CHANNEL
                s_c, q_c = gl.reduce((acc_s, acc_q), 0, _ring_add2)
                _ring_publish(word, s_c, q_c, tag)
                acc_s = gl.zeros([LANES], gl.float32, lane_layout)
                acc_q = gl.zeros([LANES], gl.float32, lane_layout)
            k = k_next.to(gl.float32)
            u_a = u - lag_tiles
            c_a, base_a, col_a, live_a = _ring_tile(u_a, n_units, n_channels, hw, PER_CHANNEL, SEGS, TILE)
            if live_a & (c_a != c_apply):  # read LAG steps ago: its words are normally in
                w = gl.load(w_ptr + c_a).to(gl.float32)
                b = gl.load(b_ptr + c_a).to(gl.float32)
                mean, var = _ring_channel_stats(x_ptr, slot_ptr, tag, c_a, n_batch, n_channels, hw, n_shares,
                                                words_per_share, count, max_spin, PER_CHANNEL, SHARE, GW, num_warps)
                scale = gl.rsqrt(var + eps) * w
                shift = b - mean * scale
                if UPDATE_RUNNING:  # noqa: SIM102 - a constexpr branch around a runtime one
                    if u_a == c_a * PER_CHANNEL:  # the program applying the channel's first tile
                        rm = gl.load(run_mean_ptr + c_a).to(gl.float32)
                        rv = gl.load(run_var_ptr + c_a).to(gl.float32)
                        unbiased = var * count / gl.maximum(count - 1.0, 1.0)
                        gl.store(run_mean_ptr + c_a,
                                 ((1.0 - momentum) * rm + momentum * mean).to(run_mean_ptr.dtype.element_ty))
                        gl.store(run_var_ptr + c_a,
                                 ((1.0 - momentum) * rv + momentum * unbiased).to(run_var_ptr.dtype.element_ty))
                        if c_a == 0:
                            gl.store(batches_ptr, gl.load(batches_ptr) + 1)  # num_batches_tracked
                c_apply = c_a
            y = (x_a.to(gl.float32) * scale + shift).to(y_ptr.dtype.element_ty)
            gl.store(y_ptr + base_a + inner, y, mask=(col_a + inner < hw) & live_a, eviction_policy="evict_first")


def _num_sms(device: torch.device) -> int:
    if device.type != "cuda":
        return 4  # the CPU interpreter: a small grid
    if device not in _SM_COUNT:  # a device query each call costs host time on every launch
        _SM_COUNT[device] = torch.cuda.get_device_properties(device).multi_processor_count
    return _SM_COUNT[device]


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
    per_sm, maxnreg = _resident(num_warps, programs_per_sm)
    per_round = max(1, _num_sms(device) * per_sm // n_tasks_per_unit)
    rounds = triton.cdiv(n_units, per_round)
    grid = (triton.cdiv(n_units, rounds) * n_tasks_per_unit,)
    return grid, maxnreg


def _resident(num_warps: int, programs_per_sm: int) -> tuple:
    """(programs per SM, maxnreg) that really fit on an SM at once: at most 64 warps and 32 programs, and
    registers capped so that many fit in 64K."""
    per_sm = max(1, min(programs_per_sm, 64 // num_warps, 32))
    regs = 65536 // (per_sm * num_warps * 32)
    return per_sm, (255 if regs > 255 else regs // 8 * 8)


def _stream_programs_per_sm(tile_bytes: int) -> int:
    """STREAM_PROGRAMS_PER_SM 0: as many streamed programs as their registers allow without spilling: a tile and
    its prefetch of 8 KiB or less fit 128 registers a thread (4 programs of 4 warps), 16 KiB ones 168 (3). 8 KiB
    tiles of bf16 words would fit 96 (5) but measure best at 4 (sweep-20261201T044106Z.json)."""
    return 4 if tile_bytes <= 8192 else 3


def _slot_words(device, n_programs: int, n_words: int, layout: tuple) -> tuple:
    """(ticket, slots, epoch) for a staged or streamed launch: WORKSPACE "fill" gives n_words fresh -1 words (the
    ticket, never read, stands in); "epoch" a workspace cached per (layout, device, stream), made once as a 0
    ticket counter and -1 words. The key holds everything that decides which words a launch writes (layout,
    programs), so a launch never finds a word that the launch two before wrote and the one before did not
    (it would read as in); one workspace per stream keeps concurrent launches apart."""
    mode = TUNABLES["WORKSPACE"]
    if mode == "fill":
        slots = torch.full((n_words,), -1, dtype=torch.int64, device=device)
        return slots, slots, False
    if mode != "epoch":
        raise ValueError(f"batchnorm: TUNABLES['WORKSPACE'] = {mode!r}, expected 'fill' or 'epoch'")
    stream = torch.cuda.current_stream(device).cuda_stream if device.type == "cuda" else 0
    key = (layout, n_programs, n_words, str(device), stream)
    if key not in _WORKSPACES:
        if len(_WORKSPACES) >= _MAX_WORKSPACES:
            _WORKSPACES.clear()
        workspace = torch.full((1 + n_words,), -1, dtype=torch.int64, device=device)
        workspace[0] = 0
        _WORKSPACES[key] = workspace
    workspace = _WORKSPACES[key]
    return workspace[:1], workspace[1:], True


def _running_args(running_mean, running_var, num_batches_tracked, stand_in: torch.Tensor) -> tuple:
    """(update, the three running-statistics arguments): without running statistics the kernel is compiled
    with UPDATE_RUNNING False and never reads them, so `stand_in` fills their places."""
    update = running_mean is not None and running_var is not None
    running = (running_mean, running_var, num_batches_tracked) if update else (stand_in,) * 3
    return update, running


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
    update, running = _running_args(running_mean, running_var, num_batches_tracked, part)
    _batchnorm_coop_kernel[grid](
        x, weight, bias, y, part, count, word, *running,
        n, c, hw, runs, eps, momentum, _MAX_SPIN_GPU if x.is_cuda else 0,
        SPLIT=split, SPLIT_P2=triton.next_power_of_2(split), ROWS=rows, RUN=run,
        PREFETCH=t["COOP_PREFETCH"], SYNC=sync, UPDATE_RUNNING=update, num_warps=t["num_warps_coop"], maxnreg=maxnreg,
    )
    return y


def _batch_norm_staged(x, weight, bias, running_mean, running_var, num_batches_tracked, momentum, eps):
    n, c = x.shape[0], x.shape[1]
    hw = x.numel() // (n * c)
    t = TUNABLES
    most = max(1, min(c, t["STAGE_BYTES"] // (n * hw * x.element_size())))
    n_stages = triton.cdiv(c, most)
    sc = triton.cdiv(c, n_stages)  # the stages evened out
    run = _run_length(hw, min(t["STAGE_TILE"], t["STAGE_RUN"]))
    segs = triton.cdiv(hw, run)
    if n * sc * segs >= 2**31:
        raise ValueError(f"batchnorm staged: {n * sc * segs} rows in a stage do not fit int32 row indices")
    per_sm, maxnreg = _resident(t["num_warps_staged"], t["STAGE_PROGRAMS_PER_SM"])
    n_programs = _num_sms(x.device) * per_sm
    # per channel, one (shifted sum, sum of squares) word per program, not in until published
    ticket, slots, epoch = _slot_words(x.device, n_programs, c * n_programs, ("staged", n, c, hw, sc, run))
    # programs meeting one channel: at most cdiv(programs, channels of the stage) + 2 (the last stage the smallest)
    window = triton.next_power_of_2(triton.cdiv(n_programs, c - (n_stages - 1) * sc) + 2)
    y = torch.empty_like(x)
    update, running = _running_args(running_mean, running_var, num_batches_tracked, slots)
    _batchnorm_staged_kernel[(n_programs,)](
        x, weight, bias, y, slots, ticket, *running,
        n, c, hw, n_stages, sc, n * segs, float(n * hw), eps, momentum, _MAX_SPIN_GPU if x.is_cuda else 0,
        SEGS=segs, ROWS=t["STAGE_TILE"] // run, RUN=run, GW=window, LAG=t["STAGE_LAG"], EVEN=hw % run == 0,
        EVICT=t["STAGE_EVICT"], UPDATE_RUNNING=update, PREFETCH=t["STAGE_PREFETCH"], EPOCH=epoch,
        num_warps=t["num_warps_staged"], maxnreg=maxnreg,
    )
    return y


def _batch_norm_streamed(x, weight, bias, running_mean, running_var, num_batches_tracked, momentum, eps):
    n, c = x.shape[0], x.shape[1]
    hw = x.numel() // (n * c)
    t = TUNABLES
    tile = min(t["STREAM_TILE"], triton.next_power_of_2(hw))
    segs = triton.cdiv(hw, tile)  # tiles per plane, the last one masked where TILE does not divide HW
    planes = t["STREAM_PLANES"] or max(1, _STREAM_TILE_BYTES // (tile * x.element_size()))
    planes = min(planes, triton.next_power_of_2(n))
    per_channel = triton.cdiv(n, planes) * segs  # the last group of planes masked where PLANES does not divide N
    n_units = c * per_channel
    if n_units * 2 >= 2**31:
        raise ValueError(f"batchnorm streamed: {n_units} tiles do not fit int32 tile indices")
    tile_bytes = planes * tile * x.element_size()
    # WORDS: 32-bit words of two bf16 values; tile, lanes and plane length then count words
    words_on = t["STREAM_WORDS"] and x.dtype == torch.bfloat16 and hw % 2 == 0 and x.data_ptr() % 4 == 0
    per_sm, maxnreg = _resident(t["num_warps_streamed"],
                                t["STREAM_PROGRAMS_PER_SM"] or _stream_programs_per_sm(tile_bytes))
    stages = t["STREAM_STAGES"]
    if per_sm * (stages - 1) * 2 * tile_bytes > _SHARED_BYTES_PER_SM:
        raise ValueError(f"batchnorm streamed: {per_sm} programs of {stages} stages of {planes}x{tile}-value tiles do "
                         "not fit one SM's shared memory (the programs wait on each other: all must be resident)")
    n_programs = _num_sms(x.device) * per_sm
    # tiles per program and step (at most what spreads all tiles over one step)
    share = max(1, min(t["STREAM_BYTES"] * segs // (planes * hw * x.element_size() * n_programs),
                       triton.cdiv(n_units, n_programs)))
    n_shares = triton.cdiv(n_units, share)
    # a channel of stage p must be all read (by every share meeting it) before step p + LAG applies it
    lag = max(t["STREAM_LAG"], 1 + triton.cdiv(per_channel - 1, share * n_programs))
    words = triton.cdiv(share - 1, per_channel) + 1  # channels a share meets at most: one word each
    layout = ("streamed", n_units, per_channel, share)
    ticket, slots, epoch = _slot_words(x.device, n_programs, n_shares * words, layout)
    lanes = min(t["STREAM_LANES"] or _STREAM_LANE_BYTES // x.element_size(), tile)  # powers of 2: divides the tile
    evict = tuple(t["STREAM_EVICT"].split(",") if isinstance(t["STREAM_EVICT"], str) else t["STREAM_EVICT"])
    if len(evict) != 3 or any(p not in _EVICT_POLICIES for p in evict):
        raise ValueError(f"batchnorm: TUNABLES['STREAM_EVICT'] = {t['STREAM_EVICT']!r}, expected three of "
                         f"{_EVICT_POLICIES} (read, re-read, store)")
    y = torch.empty_like(x)
    update, running = _running_args(running_mean, running_var, num_batches_tracked, slots)
    even = hw % tile == 0 and n % planes == 0
    unit = 2 if words_on else 1
    xu, yu = (x.view(torch.int32), y.view(torch.int32)) if words_on else (x, y)
    _batchnorm_streamed_kernel[(n_programs,)](
        x, xu, weight, bias, yu, slots, ticket, *running,
        n, c, hw, hw // unit, n_units, n_shares, words, triton.cdiv(n_shares, n_programs) + lag, float(n * hw), eps,
        momentum, _MAX_SPIN_GPU if x.is_cuda else 0,
        PER_CHANNEL=per_channel, SHARE=share, SEGS=segs, TILE=tile // unit, PLANES=planes,
        LANES=max(1, lanes // unit), GW=triton.next_power_of_2(triton.cdiv(per_channel, share) + 1), LAG=lag,
        STAGES=stages, AHEAD=int(t["STREAM_AHEAD"]), EVEN=even, UPDATE_RUNNING=update, EPOCH=epoch, WORDS=words_on,
        UNMASKED=t["STREAM_UNMASKED"] and even, ONE_TREE=t["STREAM_ONE_TREE"], ASM=x.is_cuda, EVICT_R=evict[0],
        EVICT_A=evict[1], EVICT_Y=evict[2],
        num_warps=t["num_warps_streamed"], maxnreg=maxnreg,
    )
    return y


def _capability(device: torch.device) -> tuple[int, int]:
    if device not in _CAPABILITY:
        _CAPABILITY[device] = torch.cuda.get_device_capability(device)
    return _CAPABILITY[device]


def _ring_plan(x: torch.Tensor) -> tuple[dict | None, str]:
    """(the launch of STRATEGY "ring" for x (N, C, HW...), "") or (None, why it cannot run here)."""
    if TUNABLES["RING_EVICT"] not in _EVICT_POLICIES:
        raise ValueError(f"batchnorm: TUNABLES['RING_EVICT'] = {TUNABLES['RING_EVICT']!r}, expected one of "
                         f"{_EVICT_POLICIES}")
    if gluon is None or not x.is_cuda:
        return None, "needs a CUDA GPU and Gluon (triton >= 3.5)"
    n, c = x.shape[0], x.shape[1]
    return _ring_layout(n, c, x.numel() // (n * c), x.element_size(), _num_sms(x.device))


def _ring_layout(n: int, c: int, hw: int, esize: int, n_sms: int) -> tuple[dict | None, str]:
    """_ring_plan's arithmetic: tiles, shares, lag and programs, or why they do not fit: every program resident at
    once (they wait on each other: the ring and scratch in an SM's shared memory, at most 64 warps), int32 tile
    indices."""
    t = TUNABLES
    num_warps = t["num_warps_ring"]
    vec = max(1, 16 // esize)  # 16-byte accesses
    lanes = vec * 32 * num_warps
    tile = max(lanes, min(t["RING_TILE"], triton.next_power_of_2(hw)))
    segs = triton.cdiv(hw, tile)
    per_channel = n * segs
    n_units = c * per_channel
    if n_units * 2 >= 2**31:
        return None, f"{n_units} tiles do not fit int32 tile indices"
    tile_bytes = tile * esize
    per_sm = t["RING_PROGRAMS_PER_SM"] or (5 if tile_bytes <= 8192 else 4)
    n_programs = n_sms * per_sm
    share = max(1, min(t["RING_SHARE_BYTES"] // tile_bytes, triton.cdiv(n_units, n_programs)))
    # a channel of stage p must be all read (by every share meeting it) before step p + LAG applies it
    lag = max(t["RING_LAG"], 1 + triton.cdiv(per_channel - 1, share * n_programs))
    ring_bytes = lag * share * tile_bytes
    if per_sm * (ring_bytes + _RING_SCRATCH_BYTES) > _SHARED_BYTES_PER_SM or per_sm * num_warps > 64:
        return None, (f"{per_sm} programs an SM with {lag * share} ring slots of {tile_bytes} bytes each (lag {lag}) "
                      "do not fit one SM (the programs wait on each other: all must be resident)")
    n_shares = triton.cdiv(n_units, share)
    return {"n": n, "c": c, "hw": hw, "tile": tile, "rows": tile // lanes, "lanes": lanes, "vec": vec, "segs": segs,
            "per_channel": per_channel, "n_units": n_units, "per_sm": per_sm, "n_programs": n_programs,
            "share": share, "lag": lag, "n_shares": n_shares, "words": triton.cdiv(share - 1, per_channel) + 1,
            "num_warps": num_warps, "maxnreg": min(255, 65536 // (per_sm * num_warps * 32) // 8 * 8),
            "gw": max(triton.next_power_of_2(triton.cdiv(per_channel, share) + 1), 32 * num_warps)}, ""


def _batch_norm_ring(x, weight, bias, running_mean, running_var, num_batches_tracked, momentum, eps, key=None,
                     launch=None):
    """launch: _ring_plan(x)'s, where the caller has it already."""
    p, why = (launch, "") if launch is not None else _ring_plan(x)
    if p is None:
        raise ValueError(f"batchnorm: STRATEGY 'ring' for x of shape {tuple(x.shape)} ({x.dtype}, {x.device}): {why}")
    layout = ("ring", p["n_units"], p["per_channel"], p["share"])
    ticket, slots, epoch = _slot_words(x.device, p["n_programs"], p["n_shares"] * p["words"], layout)
    y = torch.empty_like(x)
    update, running = _running_args(running_mean, running_var, num_batches_tracked, slots)
    grid = p["n_programs"]
    ints = (p["n"], p["c"], p["hw"], p["n_units"], p["n_shares"], p["words"],
            (triton.cdiv(p["n_shares"], grid) + p["lag"]) * p["share"])
    constexprs = {"PER_CHANNEL": p["per_channel"], "SHARE": p["share"], "SEGS": p["segs"], "ROWS": p["rows"],
                  "LANES": p["lanes"], "VEC": p["vec"], "GW": p["gw"], "LAG": p["lag"],
                  "EVEN": p["hw"] % p["tile"] == 0, "EVICT": TUNABLES["RING_EVICT"], "UPDATE_RUNNING": update,
                  "EPOCH": epoch}
    count = float(p["n"] * p["hw"])
    kernel = _batchnorm_ring_kernel[(grid,)](
        x, weight, bias, y, slots, ticket, *running, *ints, count, eps, momentum, _MAX_SPIN_GPU, **constexprs,
        num_warps=p["num_warps"], maxnreg=p["maxnreg"])
    # a plan needs the epoch workspace (a "fill" launch takes fresh words) and a kernel its launcher can relaunch
    if key is not None and epoch and all(hasattr(kernel, a) for a in ("run", "function", "packed_metadata")):
        if len(_RING_PLANS) >= _MAX_RING_PLANS:
            _RING_PLANS.clear()
        _RING_PLANS[key] = _RingPlan(kernel, grid, slots, ticket, (*ints, count),
                                     {**constexprs, "num_warps": p["num_warps"]})
    return y


# Launch plans ("ring"). A launch through Gluon's JIT (binding 33 arguments, 12 of them constexprs) and the launch
# arithmetic above cost about as much host time as the kernel's 0.11-0.14 ms on the H200 (the harness's host_launch_ms
# 0.19-0.25 ms, benchmarks/results/library-h200-bn-ring{1,2,3}-*.json): where no GPU work is queued ahead the GPU
# waits for them. A repeat call of one problem takes the plan the first call left: its compiled kernel relaunched
# through the kernel's own launcher with the arguments that do not change.


class _RingPlan:
    """A compiled ring kernel and the fixed part of its launch, for calls with one _ring_key."""

    def __init__(self, kernel, grid: int, slots: torch.Tensor, ticket: torch.Tensor, scalars: tuple, fixed: dict):
        names = _batchnorm_ring_kernel.arg_names
        head = ["x_ptr", "w_ptr", "b_ptr", "y_ptr", "slot_ptr", "ticket_ptr", "run_mean_ptr", "run_var_ptr",
                "batches_ptr", "n_batch", "n_channels", "hw", "n_units", "n_shares", "words_per_share", "n_iters",
                "count", "eps", "momentum", "max_spin"]
        if names[:len(head)] != head or set(names[len(head):]) != set(fixed):
            raise RuntimeError(f"batchnorm: the ring kernel's arguments changed: {names}")
        self.kernel, self.grid, self.slots, self.ticket, self.scalars = kernel, grid, slots, ticket, scalars
        # the launcher takes every parameter in order, constexprs included (it passes over those)
        self.tail = tuple(fixed[name] for name in names[len(head):])
        # the JIT loads and launches a kernel on the current device (its function handle is that device's)
        self.device = triton.runtime.driver.active.get_current_device()

    def __call__(self, x, weight, bias, running: tuple, momentum: float, eps: float) -> torch.Tensor | None:
        """y, or None where the current device is not the plan's (the JIT path then runs)."""
        driver = triton.runtime.driver.active
        if driver.get_current_device() != self.device:
            return None
        y = torch.empty_like(x)
        k = self.kernel
        k.run(self.grid, 1, 1, driver.get_current_stream(self.device), k.function, k.packed_metadata, None, None,
              None, x, weight, bias, y, self.slots, self.ticket, *running, *self.scalars, float(eps), float(momentum),
              _MAX_SPIN_GPU, *self.tail)
        return y


def _ring_key(x, weight, bias, running_mean, running_var, num_batches_tracked) -> tuple:
    """Everything the ring path's launch and the JIT's specialisation depend on: x's shape, dtype and device, each
    pointer's dtype and 16-byte alignment, whether running statistics are kept, the stream (the epoch workspace is
    per stream), the current device and the TUNABLES that choose or compile the path."""
    tensors = (weight, bias, running_mean, running_var, num_batches_tracked)
    return (x.shape, x.dtype, x.device, x.data_ptr() % 16 == 0,
            tuple(None if t is None else (t.dtype, t.device, t.data_ptr() % 16 == 0) for t in tensors),
            torch.cuda.current_stream(x.device).cuda_stream, tuple(TUNABLES[name] for name in _RING_PLAN_TUNABLES))


def _launch_hooks_idle() -> bool:
    """Whether no triton launch hook is set (profilers set them; triton 3.6's are empty HookChains by default):
    a plan, which calls no hooks, is only taken then."""
    runtime = getattr(getattr(triton, "knobs", None), "runtime", None)
    if runtime is None:
        return False
    return all(hook is None or (isinstance(getattr(hook, "calls", None), list) and not hook.calls)
               for hook in (runtime.launch_enter_hook, runtime.launch_exit_hook))


def _auto_ring(x: torch.Tensor, launch: dict | None) -> bool:
    """"auto" takes "ring" where it was measured (sm_90: the H200) and its launch (_ring_plan's, None where it does
    not fit) fills at least 3/4 of each tile with the planes."""
    return (launch is not None and _capability(x.device)[0] == 9
            and launch["hw"] >= 0.75 * launch["segs"] * launch["tile"])


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
    key = None
    large = x.numel() * x.element_size() > _AUTO_STREAMED_MIN_BYTES
    if t["RING_LAUNCH_PLANS"] and x.is_cuda and (t["STRATEGY"] == "ring" or (t["STRATEGY"] == "auto" and large)):
        key = _ring_key(x, weight, bias, running_mean, running_var, num_batches_tracked)
        plan = _RING_PLANS.get(key)
        if plan is not None and _launch_hooks_idle():
            _, running = _running_args(running_mean, running_var, num_batches_tracked, plan.slots)
            y = plan(x, weight, bias, running, momentum, eps)
            if y is not None:
                return y
    strategy = t["STRATEGY"]
    launch = None
    if strategy == "auto":
        launch = _ring_plan(x)[0] if large else None
        strategy = ("ring" if _auto_ring(x, launch) else "streamed") if large else "two_kernel"
    if strategy == "ring":
        return _batch_norm_ring(x, weight, bias, running_mean, running_var, num_batches_tracked, momentum, eps, key,
                                launch)
    if strategy == "coop":
        return _batch_norm_coop(x, weight, bias, running_mean, running_var, num_batches_tracked, momentum, eps)
    if strategy == "staged":
        return _batch_norm_staged(x, weight, bias, running_mean, running_var, num_batches_tracked, momentum, eps)
    if strategy == "streamed":
        return _batch_norm_streamed(x, weight, bias, running_mean, running_var, num_batches_tracked, momentum, eps)
    if strategy != "two_kernel":
        raise ValueError(f"batchnorm: TUNABLES['STRATEGY'] = {t['STRATEGY']!r}, expected 'auto', 'two_kernel', "
                         "'coop', 'staged', 'streamed' or 'ring'")
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
    update, running = _running_args(running_mean, running_var, num_batches_tracked, parts)
    _batchnorm_apply_kernel[(c * n * blocks_per_plane,)](
        x, weight, bias, y, parts[0], parts[1], parts[2], *running,
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
