"""Row softmax with a non-power-of-2 width that still fits in registers: 32768 x 5000 fp32.

625 MiB read + 625 MiB written. The row is padded to a block of 8192 lanes; masked lanes load -inf.
"""

import torch
from torch import nn

SIZE = "full"  # "full" | "tiny": the CPU tests (Triton interpreter) load a copy with SIZE = "tiny"
SHAPES = {"full": {"rows": 32768, "cols": 5000}, "tiny": {"rows": 4, "cols": 5000}}
ROWS, COLS = SHAPES[SIZE]["rows"], SHAPES[SIZE]["cols"]
DTYPE = torch.float32
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"  # GB-sized inputs are made where they are used
VARIANTS = [
    {"name": "odd_width", "kwargs": {"rows": 5, "cols": 1000}},  # non-power-of-2 width
    {"name": "narrow_rows", "kwargs": {"rows": 33, "cols": 7}},  # narrow rows: several rows per program, ragged last program
]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.softmax(x, dim=-1)


def get_inputs(rows=ROWS, cols=COLS):
    return [torch.randn(rows, cols, dtype=DTYPE, device=DEVICE) * 4.0]


def get_init_inputs():
    return []
