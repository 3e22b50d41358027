"""LayerNorm over the last dimension with weight and bias, fp16 activations.

Usage: kkb bench examples/specs/layernorm.py CANDIDATE.py --backend triton
"""

import torch
from torch import nn

DTYPE = "float16"
HIDDEN = 4096
VARIANTS = [
    {"name": "one_row", "kwargs": {"rows": 1}, "seed": 1},
    {"name": "odd_rows", "kwargs": {"rows": 333}, "seed": 2},
]


class Model(nn.Module):
    def __init__(self, hidden: int):
        super().__init__()
        self.norm = nn.LayerNorm(hidden, eps=1e-5)
        with torch.no_grad():
            self.norm.weight.add_(0.1 * torch.randn(hidden))
            self.norm.bias.add_(0.1 * torch.randn(hidden))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(x)


def get_inputs(rows: int = 8192):
    return [torch.randn(rows, HIDDEN) * 2.0 + 0.5]


def get_init_inputs():
    return [HIDDEN]
