"""Adversarial: right only for the 4x100 shape it saw (grid and sizes hard-coded)."""

import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def _softmax_kernel(x_ptr, y_ptr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < 100
    x = tl.load(x_ptr + row * 100 + offs, mask=mask, other=-float("inf"))
    num = tl.exp(x - tl.max(x, axis=0))
    tl.store(y_ptr + row * 100 + offs, num / tl.sum(num, axis=0), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        _softmax_kernel[(4,)](x, y, BLOCK=128)
        return y
