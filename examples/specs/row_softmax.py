"""Row-wise softmax over the last dimension of a 2-D fp32 matrix.

Usage: kkb bench examples/specs/row_softmax.py CANDIDATE.py --backend triton
"""

import torch
from torch import nn

ROWS = 256
COLS = 1000  # not a power of two: masked tail in every row

# Extra variants a candidate must also be right on (odd shapes catch hard-coded sizes).
VARIANTS = [
    {"name": "odd", "kwargs": {"rows": 7, "cols": 333}, "seed": 1},
    {"name": "wide", "kwargs": {"rows": 3, "cols": 4096}, "seed": 2},
]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=-1)


def get_inputs(rows: int = ROWS, cols: int = COLS):
    return [torch.randn(rows, cols) * 3.0]


def get_init_inputs():
    return []
