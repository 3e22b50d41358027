"""An elementwise chain: swish(x) * y + 0.5 * x, three reads and one write in a fused kernel.

Usage: kkb bench examples/specs/swish_gate.py CANDIDATE.py --backend triton
Unfused, PyTorch reads and writes temporaries between each op; a fused kernel moves 16 bytes per element.
"""

import torch
from torch import nn

VARIANTS = [
    {"name": "tiny", "kwargs": {"n": 1000}, "seed": 1},  # smaller than one block
    {"name": "prime", "kwargs": {"n": 999_983}, "seed": 2},  # a prime length: masked tail
]


class Model(nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return x * torch.sigmoid(x) * y + 0.5 * x


def get_inputs(n: int = 1 << 24):
    return [torch.randn(n), torch.randn(n)]


def get_init_inputs():
    return []
