"""RMSNorm over the last dimension with a learned scale, fp32, at sizes the Triton interpreter runs
in seconds: the main job's spec on a machine without a GPU (examples/specs/rmsnorm.py is the GPU size).

Usage: kkb tune examples/specs/rmsnorm_cpu.py --device cpu --budget 6
"""

import torch
from torch import nn

HIDDEN = 768
VARIANTS = [
    {"name": "few_rows", "kwargs": {"rows": 3}, "seed": 1},  # fewer rows than one program handles
    {"name": "odd_rows", "kwargs": {"rows": 37}, "seed": 2},
]


class Model(nn.Module):
    def __init__(self, hidden: int, eps: float):
        super().__init__()
        self.weight = nn.Parameter(1.0 + 0.1 * torch.randn(hidden))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        scale = torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        return x * scale * self.weight


def get_inputs(rows: int = 16):
    return [torch.randn(rows, HIDDEN)]


def get_init_inputs():
    return [HIDDEN, 1e-6]
