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
def _batchnorm_coop_kernel(
    x_ptr, w_ptr, b_ptr, y_ptr, part_ptr, count_ptr, run_mean_ptr, run_var_ptr, batches_ptr,
    n_batch, n_channels, hw, eps, momentum, max_spin,
    SPLIT: tl.constexpr, SPLIT_P2: tl.constexpr, CHUNK: tl.constexpr, UPDATE_RUNNING: tl.constexpr,
):
    offs = tl.arange(0, CHUNK)
    parts = tl.arange(0, SPLIT_P2)
    per_channel = n_batch * hw
    for task in range(tl.program_id(0), n_channels * SPLIT, tl.num_programs(0)):
        c = task // SPLIT
        idx = (task % SPLIT) * CHUNK + offs  # flat index over (n, hw) of channel c
        mask = idx < per_channel
        n = idx // hw
        addr = (n.to(tl.int64) * n_channels + c) * hw + (idx - n * hw)
        x = tl.load(x_ptr + addr, mask=mask, other=0.0).to(tl.float32)
        n_c = tl.sum(mask.to(tl.float32), axis=0)
        mean_c = tl.sum(x, axis=0) / tl.maximum(n_c, 1.0)
        d = tl.where(mask, x - mean_c, 0.0)
        # publish this chunk's (count, mean, M2), then wait for the channel's other chunks
        tl.store(part_ptr + 3 * task, n_c)
        tl.store(part_ptr + 3 * task + 1, mean_c)
        tl.store(part_ptr + 3 * task + 2, tl.sum(d * d, axis=0))
        tl.debug_barrier()
        done = tl.atomic_add(count_ptr + c, 1) + 1  # acq_rel: the partial is visible before the count
        spins = tl.full([], 0, tl.int32)
        while (done < SPLIT) & (spins < max_spin):
            done = tl.atomic_add(count_ptr + c, 0)
            spins += 1
        if done >= SPLIT:
            pmask = parts < SPLIT
            base = 3 * (c * SPLIT + parts)
            p_n = tl.load(part_ptr + base, mask=pmask, other=0.0, volatile=True)
            p_mean = tl.load(part_ptr + base + 1, mask=pmask, other=0.0, volatile=True)
            p_m2 = tl.load(part_ptr + base + 2, mask=pmask, other=0.0, volatile=True)
            count = tl.sum(p_n, axis=0)
            mean = tl.sum(p_n * p_mean, axis=0) / count
            dm = p_mean - mean
            m2 = tl.sum(p_m2 + p_n * dm * dm, axis=0)
        else:  # a peer is not running: read the whole channel (correct, slower; never a hang)
            count, mean, m2 = _channel_stats(x_ptr, c, n_batch, n_channels, hw, 1024)
        scale = tl.rsqrt(m2 / count + eps) * tl.load(w_ptr + c).to(tl.float32)
        shift = tl.load(b_ptr + c).to(tl.float32) - mean * scale
        tl.store(y_ptr + addr, (x * scale + shift).to(y_ptr.dtype.element_ty), mask=mask)
        if UPDATE_RUNNING:  # noqa: SIM102 - a constexpr branch around a runtime one
            if task % SPLIT == 0:
                rm = tl.load(run_mean_ptr + c).to(tl.float32)
                rv = tl.load(run_var_ptr + c).to(tl.float32)
                unbiased = m2 / tl.maximum(count - 1.0, 1.0)
                tl.store(run_mean_ptr + c, ((1.0 - momentum) * rm + momentum * mean).to(run_mean_ptr.dtype.element_ty))
                tl.store(run_var_ptr + c, ((1.0 - momentum) * rv + momentum * unbiased).to(run_var_ptr.dtype.element_ty))
                if c == 0:
                    tl.store(batches_ptr, tl.load(batches_ptr) + 1)  # num_batches_tracked


def _num_sms(device: torch.device) -> int:
    if device.type == "cuda":
        return torch.cuda.get_device_properties(device).multi_processor_count
    return 4  # the CPU interpreter: a small grid


def _batch_norm_coop(x, weight, bias, running_mean, running_var, num_batches_tracked, momentum, eps):
    n, c = x.shape[0], x.shape[1]
    hw = x.numel() // (n * c)
    t = TUNABLES
    chunk = min(t["COOP_CHUNK"], triton.next_power_of_2(n * hw))
    split = triton.cdiv(n * hw, chunk)
    per_round = max(1, _num_sms(x.device) * t["COOP_PROGRAMS_PER_SM"] // split)  # channels per round
    grid = (min(c, per_round) * split,)  # a multiple of split: a channel's programs share a round
    part = torch.empty((c * split * 3,), dtype=torch.float32, device=x.device)
    count = torch.zeros((c,), dtype=torch.int32, device=x.device)
    y = torch.empty_like(x)
    update = running_mean is not None and running_var is not None
    _batchnorm_coop_kernel[grid](
        x, weight, bias, y, part, count,
        running_mean if update else part, running_var if update else part,
        num_batches_tracked if update else part,
        n, c, hw, eps, momentum, _MAX_SPIN_GPU if x.is_cuda else 0,
        SPLIT=split, SPLIT_P2=triton.next_power_of_2(split), CHUNK=chunk, UPDATE_RUNNING=update,
        num_warps=t["num_warps_coop"],
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
