"""RMS norm (LLM hidden states) in bf16: 131072 x 4096 bf16 (1 GiB in + 1 GiB out), random learned scale.
"""

import torch
import torch.nn.functional as F
from torch import nn

SIZE = "full"  # "full" | "tiny": the CPU tests (Triton interpreter) load a copy with SIZE = "tiny"
SHAPES = {"full": {"rows": 131072, "cols": 4096}, "tiny": {"rows": 4, "cols": 4096}}
ROWS, COLS = SHAPES[SIZE]["rows"], SHAPES[SIZE]["cols"]
DTYPE = torch.bfloat16
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"  # GB-sized inputs are made where they are used
EPS = 1e-6
VARIANTS = [
    {"name": "odd_width", "kwargs": {"rows": 3, "cols": 1000}, "init_kwargs": {"cols": 1000}},  # masked lanes
]


class Model(nn.Module):
    def __init__(self, normalized_shape, eps=EPS):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(normalized_shape))
        self.eps = eps

    def forward(self, x):
        return F.rms_norm(x, (x.shape[-1],), self.weight, self.eps)


def get_inputs(rows=ROWS, cols=COLS):
    return [torch.randn(rows, cols, dtype=DTYPE, device=DEVICE) * 2.0]


def get_init_inputs(cols=COLS):
    return [cols, EPS]
