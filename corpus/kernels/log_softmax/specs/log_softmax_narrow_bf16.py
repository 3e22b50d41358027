"""Row log-softmax over narrow bf16 rows: 262144 x 1024 bf16 (512 MiB read + 512 MiB written).

Rows this narrow leave a one-row program idle most of the time; the kernel packs two rows per program.
"""

import torch
from torch import nn

SIZE = "full"  # "full" | "tiny": the CPU tests (Triton interpreter) load a copy with SIZE = "tiny"
SHAPES = {"full": {"rows": 262144, "cols": 1024}, "tiny": {"rows": 8, "cols": 1024}}
ROWS, COLS = SHAPES[SIZE]["rows"], SHAPES[SIZE]["cols"]
DTYPE = torch.bfloat16
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"  # GB-sized inputs are made where they are used
VARIANTS = [
    {"name": "narrow_rows", "kwargs": {"rows": 9, "cols": 100}},  # several rows per program, ragged last program
]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.log_softmax(x, dim=-1)


def get_inputs(rows=ROWS, cols=COLS):
    return [torch.randn(rows, cols, dtype=DTYPE, device=DEVICE) * 4.0]


def get_init_inputs():
    return []
