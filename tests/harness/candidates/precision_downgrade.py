"""Adversarial (for fp32_loose.py): computes x*y+z in bf16 on an fp32 spec."""

import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def _fma_kernel(x_ptr, y_ptr, z_ptr, o_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.bfloat16)
    y = tl.load(y_ptr + offs, mask=mask).to(tl.bfloat16)
    z = tl.load(z_ptr + offs, mask=mask).to(tl.bfloat16)
    tl.store(o_ptr + offs, (x * y + z).to(tl.float32), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x, y, z):
        out = torch.empty_like(x)
        n = x.numel()
        _fma_kernel[(triton.cdiv(n, 256),)](x, y, z, out, n, BLOCK=256)
        return out
