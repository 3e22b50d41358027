"""Adversarial: a Triton kernel that stores far out of bounds (illegal address on a GPU)."""

import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def _scribble_kernel(y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs + (1 << 36), tl.zeros([BLOCK], dtype=tl.float32), mask=offs < n)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.empty_like(x)
        n = y.numel()
        _scribble_kernel[(triton.cdiv(n, 1024),)](y, n, BLOCK=1024)
        return y
