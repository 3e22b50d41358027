"""Test spec: fp32 fused multiply-add with a loose tolerance (as KernelBench uses), for precision checks."""

import torch
from torch import nn

TOLERANCE = 2e-2


class Model(nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        return x * y + z


def get_inputs(n: int = 512):
    return [torch.randn(n), torch.randn(n), torch.randn(n)]


def get_init_inputs():
    return []
