"""Cumulative sum along the last dimension of a 3-d tensor: 128 x 256 x 3000 fp32 (375 MiB in + out).

3000 is not a power of 2: one masked scan block per row.
"""

import torch
from torch import nn

SIZE = "full"  # "full" | "tiny": the CPU tests (Triton interpreter) load a copy with SIZE = "tiny"
SHAPES = {"full": {"batch": 128, "rows": 256, "cols": 3000}, "tiny": {"batch": 2, "rows": 3, "cols": 3000}}
BATCH, ROWS, COLS = SHAPES[SIZE]["batch"], SHAPES[SIZE]["rows"], SHAPES[SIZE]["cols"]
DTYPE = torch.float32
# The reference (torch's fp32 cumsum on the H200) is itself off from an fp64 prefix sum by up to ~1e-3 at
# 16384 columns: a first H200 run found 4767 of 134M elements beyond atol 1e-4 against this kernel's exactly
# rounded result (max abs err 1.0e-3). ATOL covers the reference's own rounding; RTOL stays fp32's.
ATOL, RTOL = 2e-3, 1e-4
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"  # GB-sized inputs are made where they are used
DIM = -1
VARIANTS = [
    {"name": "odd", "kwargs": {"batch": 3, "rows": 5, "cols": 77}},
]


class Model(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return torch.cumsum(x, dim=self.dim)


def get_inputs(batch=BATCH, rows=ROWS, cols=COLS):
    return [torch.randn(batch, rows, cols, dtype=DTYPE, device=DEVICE)]


def get_init_inputs(dim=DIM):
    return [dim]
