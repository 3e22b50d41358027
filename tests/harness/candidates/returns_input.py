"""Adversarial: for specs/relu_nonneg.py, returns its input unchanged (every value is right, no kernel runs
on the data): rejected, the output shares memory with the input."""

import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def _unused_kernel(x_ptr, n, BLOCK: tl.constexpr):
    pass


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x
