"""Adversarial: carries a copy of the reference Model and calls it (must be rejected)."""

import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def _copy_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


class Model(nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=-1)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.ref = Model()

    def forward(self, x):
        return self.ref(x)
