"""Reduction over a middle dimension: torch.sum(x, dim=1) on 64 x 2048 x 1000 fp32 (500 MiB read).

The variants switch the op (mean, max, min, argmax, argmin) so one spec checks every reduction the
kernel claims, at small sizes.
"""

import torch
from torch import nn

SIZE = "full"  # "full" | "tiny": the CPU tests (Triton interpreter) load a copy with SIZE = "tiny"
SHAPES = {"full": {"batch": 64, "red": 2048, "inner": 1000}, "tiny": {"batch": 2, "red": 100, "inner": 70}}
BATCH, RED, INNER = SHAPES[SIZE]["batch"], SHAPES[SIZE]["red"], SHAPES[SIZE]["inner"]
DTYPE = torch.float32
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"  # GB-sized inputs are made where they are used
OP, DIM = "sum", 1
_SMALL = {"batch": 3, "red": 37, "inner": 45}  # odd sizes: partial tiles in both directions
VARIANTS = [
    {"name": "mean", "kwargs": _SMALL, "init_kwargs": {"op": "mean"}},
    {"name": "max", "kwargs": _SMALL, "init_kwargs": {"op": "max"}},
    {"name": "min", "kwargs": _SMALL, "init_kwargs": {"op": "min"}},
    {"name": "argmax", "kwargs": _SMALL, "init_kwargs": {"op": "argmax"}},
    {"name": "argmin", "kwargs": _SMALL, "init_kwargs": {"op": "argmin"}},
    {"name": "argmax_first_dim", "kwargs": _SMALL, "init_kwargs": {"op": "argmax", "dim": 0}},
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
