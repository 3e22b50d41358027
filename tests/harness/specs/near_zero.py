"""Test spec whose output is ~1e-6: an all-zeros output passes atol=1e-4, so the strict check must apply."""

import torch
from torch import nn


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * 1e-6


def get_inputs(n: int = 256):
    return [torch.randn(n)]


def get_init_inputs():
    return []
