"""Adversarial (for near_zero.py): returns zeros, which pass atol=1e-4 on a ~1e-6 output."""

import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def _copy_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.zeros_like(x)
        _copy_kernel[(1,)](y, y, 1, BLOCK=16)
        return y
