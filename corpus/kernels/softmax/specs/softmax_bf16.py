"""Row softmax in bf16 (attention-score sized rows): 65536 x 4096 bf16, 512 MiB read + 512 MiB written.

The kernel accumulates in fp32 and rounds once on the store.
"""

import torch
from torch import nn

SIZE = "full"  # "full" | "tiny": the CPU tests (Triton interpreter) load a copy with SIZE = "tiny"
SHAPES = {"full": {"rows": 65536, "cols": 4096}, "tiny": {"rows": 4, "cols": 4096}}
ROWS, COLS = SHAPES[SIZE]["rows"], SHAPES[SIZE]["cols"]
DTYPE = torch.bfloat16
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"  # GB-sized inputs are made where they are used
VARIANTS = [
    {"name": "pow2_plus_one", "kwargs": {"rows": 6, "cols": 513}},  # one past a power of 2
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
