"""Honest (for near_zero.py): y = x * 1e-6 (must pass the strict check too)."""

import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def _scale_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 1e-6, mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        n = x.numel()
        _scale_kernel[(triton.cdiv(n, 256),)](x, y, n, BLOCK=256)
        return y
