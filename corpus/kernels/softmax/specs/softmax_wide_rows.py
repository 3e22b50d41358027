"""Row softmax over rows far wider than one block: 4096 x 65536 fp32 (1 GiB read + 1 GiB written).

A 256 KiB row fits neither in one thread block's registers nor in its shared memory, so a kernel
must loop over the row (online max/sum, then a second pass that writes).
"""

import torch
from torch import nn

SIZE = "full"  # "full" | "tiny": the CPU tests (Triton interpreter) load a copy with SIZE = "tiny"
SHAPES = {"full": {"rows": 4096, "cols": 65536}, "tiny": {"rows": 2, "cols": 32768}}
ROWS, COLS = SHAPES[SIZE]["rows"], SHAPES[SIZE]["cols"]
DTYPE = torch.float32
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"  # GB-sized inputs are made where they are used
VARIANTS = [
    {"name": "looped_prime_width", "kwargs": {"rows": 3, "cols": 20011}},  # wider than the fused limit, prime width: looped path with a ragged tail
    {"name": "looped_many_steps", "kwargs": {"rows": 2, "cols": 70000}},  # several loop steps per row
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
