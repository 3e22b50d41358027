"""Test spec with parameters: the candidate must be built under the same seed to match the weights."""

import torch
from torch import nn

VARIANTS = [{"name": "rows5", "kwargs": {"rows": 5}, "seed": 3}]


class Model(nn.Module):
    def __init__(self, features: int, scale: float):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(features))
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.weight * self.scale


def get_inputs(rows: int = 4):
    return [torch.randn(rows, 64)]


def get_init_inputs():
    return [64, 0.5]
