"""Spec: row sums of gelu(x @ W^T + b) * scale + residual, fp32 (no TF32), 16384 rows, 1024 -> 4096.

The M x N intermediate (256 MiB in fp32) is what eager writes and re-reads between its kernels; a fused
kernel keeps each tile on chip and writes only the M row sums.

KernelBench format plus the harness conventions (harness/spec.py): DTYPE, VARIANTS, keyword sizes.
SIZE picks the default shape; the CPU tests load a copy of this file with SIZE = "tiny".
"""

import torch
from torch import nn

SIZE = "full"  # "full" | "tiny" (tiny: for the Triton interpreter on CPU)
SHAPES = {"full": {"m": 16384, "k": 1024, "n": 4096}, "tiny": {"m": 64, "k": 64, "n": 32}}
SCALE = 0.5
ACTIVATION = "gelu"
REDUCE = "sum"
DTYPE = "float32"
VARIANTS = [  # checked too (not timed): odd sizes give partial tiles and a ragged K
    {"name": "ragged", "kwargs": {"m": 48, "k": 40, "n": 36}, "init_kwargs": {"k": 40, "n": 36}},
]


class Model(nn.Module):
    def __init__(self, in_features: int, out_features: int, scale: float, activation: str = "gelu",
                 reduce: str = "none"):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.act = nn.GELU() if activation == "gelu" else nn.ReLU()
        self.scale = scale
        self.reduce = reduce

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        y = self.act(self.linear(x)) * self.scale + residual
        return y.sum(dim=-1) if self.reduce == "sum" else y


def get_inputs(m: int = SHAPES[SIZE]["m"], k: int = SHAPES[SIZE]["k"], n: int = SHAPES[SIZE]["n"]):
    return [torch.randn(m, k), torch.randn(m, n)]


def get_init_inputs(k: int = SHAPES[SIZE]["k"], n: int = SHAPES[SIZE]["n"]):
    return [k, n, SCALE, ACTIVATION, REDUCE]
