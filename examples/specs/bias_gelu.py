"""Fused bias add + GELU (tanh approximation) on a bf16 activation matrix.

Usage: kkb bench examples/specs/bias_gelu.py CANDIDATE.py --backend triton
Bytes moved: read x (M*N*2) + bias (N*2), write y (M*N*2): a fused kernel is one pass over memory.
"""

import torch
from torch import nn

DTYPE = "bfloat16"
VARIANTS = [
    {"name": "odd", "kwargs": {"rows": 17, "cols": 1000}, "seed": 1},  # masked tails in both dims
    {"name": "tall", "kwargs": {"rows": 8192, "cols": 64}, "seed": 2},
]


class Model(nn.Module):
    def __init__(self, cols: int = 4096):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(cols) * 0.1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # the bias has a fixed size: variants slice it (a candidate must do the same)
        return nn.functional.gelu(x + self.bias[: x.shape[-1]], approximate="tanh")


def get_inputs(rows: int = 4096, cols: int = 4096):
    return [torch.randn(rows, cols)]


def get_init_inputs():
    return [4096]
