"""Cumulative sum along rows: torch.cumsum(x, dim=1) on 8192 x 16384 fp32 (512 MiB in + 512 MiB out).

Each row spans many scan blocks, so a kernel must carry the running total across blocks.
"""

import torch
from torch import nn

SIZE = "full"  # "full" | "tiny": the CPU tests (Triton interpreter) load a copy with SIZE = "tiny"
SHAPES = {"full": {"rows": 8192, "cols": 16384}, "tiny": {"rows": 3, "cols": 5000}}
ROWS, COLS = SHAPES[SIZE]["rows"], SHAPES[SIZE]["cols"]
DTYPE = torch.float32
# The reference (torch's fp32 cumsum on the H200) is itself off from an fp64 prefix sum by up to ~1e-3 at
# 16384 columns: a first H200 run found 4767 of 134M elements beyond atol 1e-4 against this kernel's exactly
# rounded result (max abs err 1.0e-3). ATOL covers the reference's own rounding; RTOL stays fp32's.
ATOL, RTOL = 2e-3, 1e-4
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"  # GB-sized inputs are made where they are used
DIM = 1
VARIANTS = [
    {"name": "ragged_blocks", "kwargs": {"rows": 2, "cols": 4099}},  # carry across a ragged last block
    {"name": "narrow_rows", "kwargs": {"rows": 37, "cols": 33}},  # several rows per program
    {"name": "first_dim", "kwargs": {"rows": 40, "cols": 6}, "init_kwargs": {"dim": 0}},  # moved dimension
]


class Model(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return torch.cumsum(x, dim=self.dim)


def get_inputs(rows=ROWS, cols=COLS):
    return [torch.randn(rows, cols, dtype=DTYPE, device=DEVICE)]


def get_init_inputs(dim=DIM):
    return [dim]
