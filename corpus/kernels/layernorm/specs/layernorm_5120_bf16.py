"""Layer norm in bf16 over a non-power-of-2 hidden size: 65536 x 5120 bf16 (640 MiB in + 640 MiB out).

Statistics in fp32; the row is padded to 8192 lanes in registers.
"""

import torch
import torch.nn.functional as F
from torch import nn

SIZE = "full"  # "full" | "tiny": the CPU tests (Triton interpreter) load a copy with SIZE = "tiny"
SHAPES = {"full": {"rows": 65536, "cols": 5120}, "tiny": {"rows": 4, "cols": 5120}}
ROWS, COLS = SHAPES[SIZE]["rows"], SHAPES[SIZE]["cols"]
DTYPE = torch.bfloat16
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"  # GB-sized inputs are made where they are used
EPS = 1e-5
VARIANTS = [
    {"name": "odd_width", "kwargs": {"rows": 3, "cols": 777}, "init_kwargs": {"cols": 777}},  # masked lanes
]


class Model(nn.Module):
    def __init__(self, normalized_shape, eps=EPS):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(normalized_shape))
        self.bias = nn.Parameter(torch.randn(normalized_shape))
        self.eps = eps

    def forward(self, x):
        return F.layer_norm(x, (x.shape[-1],), self.weight, self.bias, self.eps)


def get_inputs(rows=ROWS, cols=COLS):
    return [torch.randn(rows, cols, dtype=DTYPE, device=DEVICE) * 3.0 + 1.0]


def get_init_inputs(cols=COLS):
    return [cols, EPS]
