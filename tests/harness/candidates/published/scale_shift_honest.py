"""Honest Triton candidate for tests/published_specs/10_ScaleShift_Helper.py: scale, shift and GELU in
one pointwise kernel; the parameter and the buffer are made as the reference makes them (same seed)."""

import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def _scale_shift_gelu_kernel(x_ptr, scale_ptr, shift_ptr, y_ptr, n_elements, n_features, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    col = offs % n_features
    x = tl.load(x_ptr + offs, mask=mask)
    z = x * tl.load(scale_ptr + col, mask=mask) + tl.load(shift_ptr + col, mask=mask)
    inner = 0.7978845608028654 * (z + 0.044715 * z * z * z)
    tanh = 2.0 / (1.0 + tl.exp(-2.0 * inner)) - 1.0
    tl.store(y_ptr + offs, 0.5 * z * (1.0 + tanh), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, num_features):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(num_features))
        self.register_buffer("shift", torch.linspace(-1.0, 1.0, num_features))
        self.num_features = num_features

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        BLOCK = 256
        _scale_shift_gelu_kernel[(triton.cdiv(n, BLOCK),)](x, self.scale, self.shift, y, n, self.num_features,
                                                           BLOCK=BLOCK)
        return y
