"""Reduction over the last dimension: torch.argmax(x, dim=-1) on 32768 x 4099 fp32 (513 MiB read).

The variants run the other ops over the last dimension, and bf16 ties (first index wins).
"""

import torch
from torch import nn

SIZE = "full"  # "full" | "tiny": the CPU tests (Triton interpreter) load a copy with SIZE = "tiny"
SHAPES = {"full": {"rows": 32768, "cols": 4099}, "tiny": {"rows": 5, "cols": 4099}}
ROWS, COLS = SHAPES[SIZE]["rows"], SHAPES[SIZE]["cols"]
DTYPE = torch.float32
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"  # GB-sized inputs are made where they are used
OP, DIM = "argmax", -1
_SMALL = {"rows": 9, "cols": 300}
VARIANTS = [
    {"name": "sum", "kwargs": _SMALL, "init_kwargs": {"op": "sum"}},
    {"name": "mean", "kwargs": _SMALL, "init_kwargs": {"op": "mean"}},
    {"name": "max", "kwargs": _SMALL, "init_kwargs": {"op": "max"}},
    {"name": "min", "kwargs": _SMALL, "init_kwargs": {"op": "min"}},
    {"name": "argmin", "kwargs": _SMALL, "init_kwargs": {"op": "argmin"}},
    {"name": "argmax_ties", "kwargs": {"rows": 4, "cols": 2000, "ties": True}},  # many equal maxima
]


class Model(nn.Module):
    def __init__(self, op, dim):
        super().__init__()
        self.op, self.dim = op, dim

    def forward(self, x):
        if self.op in ("max", "min"):
            return getattr(torch, self.op)(x, dim=self.dim).values
        return getattr(torch, self.op)(x, dim=self.dim)


def get_inputs(rows=ROWS, cols=COLS, ties=False):
    if ties:  # a few distinct values: every row has its maximum many times
        return [torch.randint(0, 4, (rows, cols), device=DEVICE).to(DTYPE)]
    return [torch.randn(rows, cols, dtype=DTYPE, device=DEVICE)]


def get_init_inputs(op=OP, dim=DIM):
    return [op, dim]
