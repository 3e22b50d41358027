"""Rejected for the suite tests: launches a Triton kernel for show, then returns PyTorch's own sum."""

import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def _copy_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        scratch = torch.empty_like(x)
        _copy_kernel[(triton.cdiv(x.numel(), 256),)](x, scratch, x.numel(), BLOCK=256)
        return torch.sum(x, dim=self.dim)
