"""Reduction over a middle dimension in bf16: torch.max(x, dim=1).values on 256 x 1024 x 1024 bf16
(512 MiB read); the result is exact (a max needs no rounding).
"""

import torch
from torch import nn

SIZE = "full"  # "full" | "tiny": the CPU tests (Triton interpreter) load a copy with SIZE = "tiny"
SHAPES = {"full": {"batch": 256, "red": 1024, "inner": 1024}, "tiny": {"batch": 2, "red": 64, "inner": 128}}
BATCH, RED, INNER = SHAPES[SIZE]["batch"], SHAPES[SIZE]["red"], SHAPES[SIZE]["inner"]
DTYPE = torch.bfloat16
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"  # GB-sized inputs are made where they are used
OP, DIM = "max", 1
VARIANTS = [
    {"name": "argmin_ties", "kwargs": {"batch": 2, "red": 300, "inner": 33},
     "init_kwargs": {"op": "argmin"}},  # bf16 randn has many ties over 300 values: first index wins
    {"name": "sum_bf16", "kwargs": {"batch": 2, "red": 50, "inner": 33}, "init_kwargs": {"op": "sum"}},
]


class Model(nn.Module):
    def __init__(self, op, dim):
        super().__init__()
        self.op, self.dim = op, dim

    def forward(self, x):
        if self.op in ("max", "min"):
            return getattr(torch, self.op)(x, dim=self.dim).values
        return getattr(torch, self.op)(x, dim=self.dim)


def get_inputs(batch=BATCH, red=RED, inner=INNER):
    return [torch.randn(batch, red, inner, dtype=DTYPE, device=DEVICE)]


def get_init_inputs(op=OP, dim=DIM):
    return [op, dim]
