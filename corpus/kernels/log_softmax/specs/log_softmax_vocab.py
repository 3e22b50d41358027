"""Row log-softmax over a vocabulary-sized row: 4096 x 50257 fp32 (785 MiB read + 785 MiB written).

50257 is odd and wider than one block: the looped path with a ragged last block.
"""

import torch
from torch import nn

SIZE = "full"  # "full" | "tiny": the CPU tests (Triton interpreter) load a copy with SIZE = "tiny"
SHAPES = {"full": {"rows": 4096, "cols": 50257}, "tiny": {"rows": 2, "cols": 50257}}
ROWS, COLS = SHAPES[SIZE]["rows"], SHAPES[SIZE]["cols"]
DTYPE = torch.float32
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"  # GB-sized inputs are made where they are used
VARIANTS = [
    {"name": "looped_prime_width", "kwargs": {"rows": 3, "cols": 20011}},  # looped path, prime width
    {"name": "fused_odd_width", "kwargs": {"rows": 4, "cols": 300}},  # fused path, non-power-of-2
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
