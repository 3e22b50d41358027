"""Cross-entropy with integer targets, mean over the batch: mean_i(logsumexp(x_i) - x_i[t_i]).

- _cross_entropy_rows_kernel, one program per row: a single read of the row with a blockwise online
  (running max, rescaled sum of exp) update, one exp per logit, then the target logit (one gathered load).
  Bytes moved: the logits once (the minimum), plus 8 bytes of target per row.
- _cross_entropy_rows_aligned_kernel (ONLINE "aligned" or "group"), one program per row: the row as a head
  of < VEC elements, whole BLOCKs from the first 16-byte-aligned offset loaded without masks (128-bit loads
  even when the row length leaves rows misaligned, e.g. 50257 fp32), and a masked tail; the running sum is
  kept in base 2 (one exp2 per logit). "aligned" reduces a block max and sum per step; "group" keeps a
  (max, sum) per 8 contiguous logits, all in one thread: no cross-lane work until the row ends, and one
  extra exp2 per 8 logits for the rescale. STAGES > 1 pipelines the body loads (tl.range num_stages).
- _mean_kernel, one program: sums the per-row losses and the count of rows whose target is not
  ignore_index (-100, as torch), and divides.
"""

import torch
import triton
import triton.language as tl
from torch import nn

TUNABLES = {
    "BLOCK": 2048,  # logits per loop step (capped at the row width)
    "num_warps": 4,
    "BLOCK_MEAN": 1024,
    # "block": per loop step a block max and a block sum (two cross-warp reductions per step, one exp per
    # logit); "lane": per-lane running (max, sum) with one exp per logit (exp(-|x - m|): whichever of the
    # new logit or the old sum needs scaling) and no cross-lane reduction until the row ends
    # "aligned": "block" on an aligned, unmasked body (see _cross_entropy_rows_aligned_kernel);
    # "group": the same with a (max, sum) per 8 contiguous logits instead of per block
    "ONLINE": "group",
    "STAGES": 1,  # "aligned"/"group": body blocks whose loads are in flight at once (tl.range num_stages)
    "EVICT": False,  # "aligned"/"group": evict_first on the logit loads (each is read once)
}
IGNORE_INDEX = -100

_NEG = tl.constexpr(-3.0e38)  # finite stand-in for -inf on masked lanes (no inf - inf)
_NEG_START = tl.constexpr(-1.0e38)  # aligned kernel: a running max's start, finite even times log2(e)
_LOG2E = tl.constexpr(1.4426950408889634)
_GROUP = 8  # ONLINE "group": logits per (max, sum) pair


@triton.jit
def _cross_entropy_rows_kernel(
    x_ptr, t_ptr, loss_ptr, n_cols, stride_x, ignore_index,
    BLOCK: tl.constexpr,
):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * stride_x
    cols = tl.arange(0, BLOCK)
    # blockwise online log-sum-exp: one exp per logit (bf16 logits arrive fast enough that two exps per
    # logit, as a per-lane update needs, would make the exp unit the limit)
    m = tl.max(tl.full([BLOCK], _NEG, tl.float32), axis=0)
    s = tl.sum(tl.zeros([BLOCK], tl.float32), axis=0)
    for start in range(0, n_cols, BLOCK):
        x = tl.load(x_row + start + cols, mask=start + cols < n_cols, other=_NEG).to(tl.float32)
        m_new = tl.maximum(m, tl.max(x, axis=0))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)
        m = m_new
    lse = m + tl.log(s)
    target = tl.load(t_ptr + row)
    valid = target != ignore_index
    safe = tl.where(valid, target, 0)
    x_t = tl.load(x_row + safe).to(tl.float32)
    tl.store(loss_ptr + row, tl.where(valid, lse - x_t, 0.0))


@triton.jit
def _cross_entropy_rows_lane_kernel(
    x_ptr, t_ptr, loss_ptr, n_cols, stride_x, ignore_index,
    BLOCK: tl.constexpr,
):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * stride_x
    cols = tl.arange(0, BLOCK)
    # Per lane: m the running max (finite _NEG until a logit arrives), s the sum of exp(x - m).
    # d = x - m; d > 0: s = s * exp(-d) + 1, m = x; else s += exp(d). One exp per logit either way.
    # Masked lanes read -inf: d = -inf, exp -> 0, nothing changes (m stays finite, so no inf - inf).
    m = tl.full([BLOCK], _NEG, tl.float32)
    s = tl.zeros([BLOCK], tl.float32)
    for start in range(0, n_cols, BLOCK):
        x = tl.load(x_row + start + cols, mask=start + cols < n_cols, other=float("-inf")).to(tl.float32)
        d = x - m
        e = tl.exp(-tl.abs(d))
        up = d > 0
        s = tl.where(up, s * e + 1.0, s + e)
        m = tl.where(up, x, m)
    m_row = tl.max(m, axis=0)
    lse = m_row + tl.log(tl.sum(s * tl.exp(m - m_row), axis=0))
    target = tl.load(t_ptr + row)
    valid = target != ignore_index
    safe = tl.where(valid, target, 0)
    x_t = tl.load(x_row + safe).to(tl.float32)
    tl.store(loss_ptr + row, tl.where(valid, lse - x_t, 0.0))


@triton.jit
def _aligned_row_split(row_start, n_cols, BLOCK: tl.constexpr, VEC: tl.constexpr):
    """A row starting at element offset row_start, as a head of < VEC elements, n_full whole BLOCKs from
    the offset `body`, and a tail of < BLOCK elements. body is rounded up to a multiple of VEC through
    `// VEC * VEC`, which Triton's alignment analysis can follow (16-byte vectors)."""
    body = (row_start + VEC - 1) // VEC * VEC
    head = (body - row_start).to(tl.int32)
    n_full = tl.maximum(n_cols - head, 0) // BLOCK
    return body, head, n_full


@triton.jit
def _lse_update(m, s, x, AXIS: tl.constexpr):
    """Fold x (masked lanes -inf) into (max, sum of 2^((x - max) * log2 e)) along AXIS; m, s are x reduced
    along AXIS. Per logit one fused x * log2e - max * log2e and one exp2; the rescale of s takes (m - m_new)
    first, so an untouched max (m = m_new = _NEG_START) gives exactly 2^0 whatever the compiler fuses."""
    m_new = tl.maximum(m, tl.max(x, axis=AXIS))
    m_log2 = m_new * _LOG2E
    if AXIS == 0:
        e = tl.exp2(x * _LOG2E - m_log2)
    else:
        e = tl.exp2(x * _LOG2E - m_log2[:, None])
    return m_new, s * tl.exp2((m - m_new) * _LOG2E) + tl.sum(e, axis=AXIS)


@triton.jit
def _lse_row_blocks(x_ptr, body, head, n_full, n_cols, cols, m, s, BLOCK: tl.constexpr, STAGES: tl.constexpr,
                    EVICT: tl.constexpr, AXIS: tl.constexpr):
    """Fold the row's n_full unmasked blocks from `body`, then its masked tail, into (m, s)."""
    for k in tl.range(0, n_full, num_stages=STAGES):
        xb = tl.load(x_ptr + body + k * BLOCK + cols, eviction_policy=EVICT)
        m, s = _lse_update(m, s, xb.to(tl.float32), AXIS)
    tail_mask = head + n_full * BLOCK + cols < n_cols
    x = tl.load(x_ptr + body + n_full * BLOCK + cols, mask=tail_mask, other=float("-inf"))
    return _lse_update(m, s, x.to(tl.float32), AXIS)


@triton.jit
def _cross_entropy_rows_aligned_kernel(
    x_ptr, t_ptr, loss_ptr, n_cols, ignore_index,
    BLOCK: tl.constexpr, VEC: tl.constexpr, GROUP: tl.constexpr, STAGES: tl.constexpr, EVICT: tl.constexpr,
):
    """Rows of stride n_cols. GROUP 0: one (max, sum) per row; GROUP g: one per g contiguous logits."""
    row = tl.program_id(0).to(tl.int64)
    row_start = row * n_cols
    body, head, n_full = _aligned_row_split(row_start, n_cols, BLOCK, VEC)
    if GROUP == 0:
        cols = tl.arange(0, BLOCK)
        m = tl.full([], _NEG_START, tl.float32)
        s = tl.full([], 0.0, tl.float32)
        m, s = _lse_row_blocks(x_ptr, body, head, n_full, n_cols, cols, m, s, BLOCK, STAGES, EVICT, 0)
    else:
        cols = tl.arange(0, BLOCK // GROUP)[:, None] * GROUP + tl.arange(0, GROUP)[None, :]
        m = tl.full([BLOCK // GROUP], _NEG_START, tl.float32)
        s = tl.zeros([BLOCK // GROUP], tl.float32)
        m, s = _lse_row_blocks(x_ptr, body, head, n_full, n_cols, cols, m, s, BLOCK, STAGES, EVICT, 1)
    if GROUP != 0:  # fold the groups
        m_row = tl.max(m, axis=0)
        s = tl.sum(s * tl.exp2((m - m_row) * _LOG2E), axis=0)
        m = m_row
    hcols = tl.arange(0, VEC)
    x_head = tl.load(x_ptr + row_start + hcols, mask=(hcols < head) & (hcols < n_cols), other=float("-inf"))
    m, s = _lse_update(m, s, x_head.to(tl.float32), 0)
    lse = m + tl.log(s)
    target = tl.load(t_ptr + row)
    valid = target != ignore_index
    safe = tl.where(valid, target, 0)
    x_t = tl.load(x_ptr + row_start + safe).to(tl.float32)
    tl.store(loss_ptr + row, tl.where(valid, lse - x_t, 0.0))


@triton.jit
def _mean_kernel(loss_ptr, t_ptr, out_ptr, n_rows, ignore_index, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], tl.float32)
    cnt = tl.zeros([BLOCK], tl.float32)
    for start in range(0, n_rows, BLOCK):
        mask = start + offs < n_rows
        acc += tl.load(loss_ptr + start + offs, mask=mask, other=0.0)
        t = tl.load(t_ptr + start + offs, mask=mask, other=ignore_index)
        cnt += (t != ignore_index).to(tl.float32)
    total = tl.sum(acc, axis=0) / tl.sum(cnt, axis=0)  # all rows ignored -> nan, as torch
    tl.store(out_ptr, total.to(out_ptr.dtype.element_ty))


def cross_entropy(logits: torch.Tensor, targets: torch.Tensor, ignore_index: int = IGNORE_INDEX):
    if logits.dim() != 2 or targets.dim() != 1 or targets.shape[0] != logits.shape[0]:
        raise ValueError(f"cross entropy takes logits (B, V) and targets (B,), got {tuple(logits.shape)} "
                         f"and {tuple(targets.shape)}")
    if targets.is_floating_point():
        raise ValueError(f"cross entropy targets must be class indices (integers), got {targets.dtype}")
    x = logits if logits.stride(-1) == 1 else logits.contiguous()
    t = targets.contiguous()
    n_rows, n_cols = x.shape
    losses = torch.empty(n_rows, dtype=torch.float32, device=x.device)
    opt = TUNABLES
    block = min(opt["BLOCK"], triton.next_power_of_2(n_cols))
    warps = max(1, min(opt["num_warps"], block // 256))
    if opt["ONLINE"] in ("aligned", "group"):
        x = x.contiguous()  # row stride n_cols: the kernel aligns each row from its start offset
        _cross_entropy_rows_aligned_kernel[(n_rows,)](
            x, t, losses, n_cols, ignore_index, BLOCK=block, VEC=16 // x.element_size(),
            GROUP=min(_GROUP, block) if opt["ONLINE"] == "group" else 0, STAGES=opt["STAGES"],
            EVICT="evict_first" if opt["EVICT"] else "", num_warps=warps,
        )
    elif opt["ONLINE"] in ("block", "lane"):
        rows_kernel = _cross_entropy_rows_lane_kernel if opt["ONLINE"] == "lane" else _cross_entropy_rows_kernel
        rows_kernel[(n_rows,)](x, t, losses, n_cols, x.stride(0), ignore_index, BLOCK=block, num_warps=warps)
    else:
        raise ValueError(f"cross entropy: TUNABLES['ONLINE'] is {opt['ONLINE']!r}, not one of "
                         "'block', 'lane', 'aligned', 'group'")
    out = torch.empty((), dtype=logits.dtype, device=x.device)
    _mean_kernel[(1,)](losses, t, out, n_rows, ignore_index, BLOCK=TUNABLES["BLOCK_MEAN"], num_warps=4)
    return out


class ModelNew(nn.Module):
    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, logits, targets):
        return cross_entropy(logits, targets)
