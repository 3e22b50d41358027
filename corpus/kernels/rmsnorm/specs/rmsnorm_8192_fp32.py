"""RMS norm in fp32 over 8192 features: 32768 x 8192 fp32 (1 GiB in + 1 GiB out), random learned scale.
"""

import torch
import torch.nn.functional as F
from torch import nn

SIZE = "full"  # "full" | "tiny": the CPU tests (Triton interpreter) load a copy with SIZE = "tiny"
SHAPES = {"full": {"rows": 32768, "cols": 8192}, "tiny": {"rows": 3, "cols": 8192}}
ROWS, COLS = SHAPES[SIZE]["rows"], SHAPES[SIZE]["cols"]
DTYPE = torch.float32
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"  # GB-sized inputs are made where they are used
EPS = 1e-6
VARIANTS = [
    {"name": "wide_rows", "kwargs": {"rows": 2, "cols": 20011}, "init_kwargs": {"cols": 20011}},  # looped path
    {"name": "narrow_rows", "kwargs": {"rows": 17, "cols": 96}, "init_kwargs": {"cols": 96}},  # rows per program
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
