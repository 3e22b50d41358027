"""Group norm over (N, C, *spatial) with a per-channel affine, fp32 statistics.

Group (n, g) is one contiguous run of (C / G) * HW elements, so it is a "row" of a row-norm kernel;
the channel of element i of a group is g * (C / G) + i // HW, which picks its weight and bias.
- fused (group <= MAX_FUSED_N elements): the group stays in registers: one read, one write.
- looped (larger groups, e.g. 16 channels x 64 x 64 = 65536): a persistent grid walks groups; pass 1
  merges per-block (count, mean, M2) with Chan's formula, pass 2 re-reads the group from its end
  backwards (L2-warm) and writes y.
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
}


@triton.jit
def _groupnorm_fused_kernel(
    x_ptr, w_ptr, b_ptr, y_ptr, n_groups_total, group_size, hw, channels_per_group, n_groups, eps,
    BLOCK: tl.constexpr,
):
    grp = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    mask = offs < group_size
    base = grp * group_size
    x = tl.load(x_ptr + base + offs, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / group_size
    xc = tl.where(mask, x - mean, 0.0)
    rstd = tl.rsqrt(tl.sum(xc * xc, axis=0) / group_size + eps)
    ch = (grp % n_groups) * channels_per_group + offs // hw
    w = tl.load(w_ptr + ch, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + ch, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + base + offs, (xc * rstd * w + b).to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _groupnorm_looped_kernel(
    x_ptr, w_ptr, b_ptr, y_ptr, n_groups_total, group_size, hw, channels_per_group, n_groups, eps,
    BLOCK: tl.constexpr,
):
    offs = tl.arange(0, BLOCK)
    for grp in range(tl.program_id(0), n_groups_total, tl.num_programs(0)):
        base = tl.cast(grp, tl.int64) * group_size
        count = 0.0
        mean = 0.0
        m2 = 0.0
        for start in range(0, group_size, BLOCK):
            mask = start + offs < group_size
            x = tl.load(x_ptr + base + start + offs, mask=mask, other=0.0).to(tl.float32)
            n_b = tl.sum(mask.to(tl.float32), axis=0)
            mean_b = tl.sum(x, axis=0) / n_b
            d = tl.where(mask, x - mean_b, 0.0)
            m2_b = tl.sum(d * d, axis=0)
            total = count + n_b
            delta = mean_b - mean
            mean = mean + delta * (n_b / total)
            m2 = m2 + m2_b + delta * delta * (count * n_b / total)
            count = total
        rstd = tl.rsqrt(m2 / group_size + eps)
        ch0 = (grp % n_groups) * channels_per_group
        last = tl.cdiv(group_size, BLOCK) - 1
        for i in range(last + 1):  # newest blocks first, while they are still in L2
            start = (last - i) * BLOCK
            mask = start + offs < group_size
            x = tl.load(x_ptr + base + start + offs, mask=mask, other=0.0).to(tl.float32)
            ch = ch0 + (start + offs) // hw
            w = tl.load(w_ptr + ch, mask=mask, other=0.0).to(tl.float32)
            b = tl.load(b_ptr + ch, mask=mask, other=0.0).to(tl.float32)
            y = (x - mean) * rstd * w + b
            tl.store(y_ptr + base + start + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


def _num_sms(device: torch.device) -> int:
    if device.type == "cuda":
        return torch.cuda.get_device_properties(device).multi_processor_count
    return 4  # the CPU interpreter: a small grid


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
    if group_size <= t["MAX_FUSED_N"]:
        block = triton.next_power_of_2(group_size)
        warps = max(1, min(16, block // (32 * t["ELEMS_PER_THREAD"])))
        _groupnorm_fused_kernel[(total,)](
            x, w, b, y, total, group_size, hw, cpg, num_groups, eps, BLOCK=block, num_warps=warps,
        )
    else:
        grid = (min(total, _num_sms(x.device) * t["PROGRAMS_PER_SM"]),)
        _groupnorm_looped_kernel[grid](
            x, w, b, y, total, group_size, hw, cpg, num_groups, eps,
            BLOCK=t["BLOCK_LOOP"], num_warps=t["num_warps_loop"],
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
