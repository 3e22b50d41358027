"""Conv-free pooling: the maximum over each window of 4 consecutive features, fp32.

Usage: kkb bench examples/specs/group_max_pool.py CANDIDATE.py --backend triton
Output is (rows, cols // 4); bytes moved are 1.25x the input.
"""

import torch
from torch import nn

WINDOW = 4
VARIANTS = [
    {"name": "odd_rows", "kwargs": {"rows": 7, "cols": 64}, "seed": 1},
    {"name": "wide", "kwargs": {"rows": 3, "cols": 40000}, "seed": 2},
]


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows, cols = x.shape
        return x.view(rows, cols // WINDOW, WINDOW).amax(dim=-1)


def get_inputs(rows: int = 4096, cols: int = 4096):
    return [torch.randn(rows, cols)]


def get_init_inputs():
    return []
