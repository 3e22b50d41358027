"""Test spec: row softmax on tiny shapes (the Triton interpreter runs one program per row)."""

import torch
from torch import nn

VARIANTS = [
    {"name": "odd", "kwargs": {"rows": 3, "cols": 37}, "seed": 1},  # non-power-of-two tail
    {"name": "wide", "kwargs": {"rows": 2, "cols": 300}, "seed": 2},  # wider than the default block
]


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=-1)


def get_inputs(rows: int = 4, cols: int = 100):
    return [torch.randn(rows, cols) * 2.0]


def get_init_inputs():
    return []
