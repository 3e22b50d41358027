"""RMSNorm over the last dimension with a learned scale, fp32.

Usage: kkb bench examples/specs/rmsnorm.py CANDIDATE.py --backend triton
"""

import torch
from torch import nn

HIDDEN = 2048
VARIANTS = [
    {"name": "few_rows", "kwargs": {"rows": 5}, "seed": 1},
    {"name": "many_rows", "kwargs": {"rows": 16384}, "seed": 2},
]


class Model(nn.Module):
    def __init__(self, hidden: int, eps: float):
        super().__init__()
        self.weight = nn.Parameter(1.0 + 0.1 * torch.randn(hidden))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        scale = torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        return x * scale * self.weight


def get_inputs(rows: int = 4096):
    return [torch.randn(rows, HIDDEN)]


def get_init_inputs():
    return [HIDDEN, 1e-6]
