"""Broken: tl.arange needs a power-of-two range, so the Triton compile fails (compile_error)."""

import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def _bad_kernel(x_ptr, y_ptr, n):
    offs = tl.arange(0, 100)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        _bad_kernel[(1,)](x, y, x.numel())
        return y
