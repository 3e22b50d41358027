"""Sum over the middle dimension of a 3-D fp32 tensor (a strided reduction).

Usage: kkb bench examples/specs/sum_reduction.py CANDIDATE.py --backend triton
"""

import torch
from torch import nn

VARIANTS = [
    {"name": "odd", "kwargs": {"batch": 3, "length": 77, "width": 129}, "seed": 1},
    {"name": "long", "kwargs": {"batch": 2, "length": 65536, "width": 8}, "seed": 2},
]


class Model(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sum(x, dim=self.dim)


def get_inputs(batch: int = 32, length: int = 1024, width: int = 1024):
    return [torch.randn(batch, length, width)]


def get_init_inputs():
    return [1]
