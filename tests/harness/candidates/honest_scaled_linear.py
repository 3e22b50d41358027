"""Honest (for scaled_linear.py): same constructor, same seed, so the weights match."""

import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def _scale_kernel(x_ptr, w_ptr, y_ptr, n_cols, scale, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    mask = offs < n_cols
    x = tl.load(x_ptr + row * n_cols + offs, mask=mask)
    w = tl.load(w_ptr + offs, mask=mask)
    tl.store(y_ptr + row * n_cols + offs, x * w * scale, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, features: int, scale: float):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(features))
        self.scale = scale

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        _scale_kernel[(x.shape[0],)](x, self.weight, y, x.shape[1], self.scale,
                                     BLOCK=triton.next_power_of_2(x.shape[1]))
        return y
