"""Adversarial: launches a Triton kernel for show, returns torch.softmax (must be rejected)."""

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
        y = torch.empty_like(x)
        _copy_kernel[(1,)](x, y, min(x.numel(), 64), BLOCK=64)
        return torch.softmax(x, dim=-1)
