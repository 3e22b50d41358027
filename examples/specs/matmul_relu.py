"""A bf16 matmul followed by ReLU: C = relu(A @ B), fp32 accumulation expected.

Usage: kkb bench examples/specs/matmul_relu.py CANDIDATE.py --backend triton
FLOPs: 2*M*N*K (counted by FlopCounterMode on the reference).
"""

import torch
from torch import nn

DTYPE = "bfloat16"
VARIANTS = [
    {"name": "ragged", "kwargs": {"m": 100, "n": 72, "k": 200}, "seed": 1},  # no multiple of a tile
    {"name": "skinny", "kwargs": {"m": 16, "n": 1024, "k": 512}, "seed": 2},
]


class Model(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.relu(a @ b)


def get_inputs(m: int = 1024, n: int = 1024, k: int = 1024):
    return [torch.randn(m, k) / k**0.25, torch.randn(k, n) / k**0.25]


def get_init_inputs():
    return []
