"""Suite test spec (KernelBench-style name): sum over the last dimension."""

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sum(x, dim=self.dim)


def get_inputs():
    return [torch.randn(8, 64)]


def get_init_inputs():
    return [1]
