"""Layer norm over the last dimension with a learned affine: 32768 x 4096 fp32 (512 MiB in + 512 MiB out).

The reference's weight and bias are random (not ones/zeros) so a kernel that drops the affine fails.
"""

import torch
import torch.nn.functional as F
from torch import nn

SIZE = "full"  # "full" | "tiny": the CPU tests (Triton interpreter) load a copy with SIZE = "tiny"
SHAPES = {"full": {"rows": 32768, "cols": 4096}, "tiny": {"rows": 4, "cols": 4096}}
ROWS, COLS = SHAPES[SIZE]["rows"], SHAPES[SIZE]["cols"]
DTYPE = torch.float32
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"  # GB-sized inputs are made where they are used
EPS = 1e-5
VARIANTS = [
    {"name": "odd_width", "kwargs": {"rows": 5, "cols": 1000}, "init_kwargs": {"cols": 1000}},  # masked lanes
    {"name": "wide_rows", "kwargs": {"rows": 2, "cols": 20011}, "init_kwargs": {"cols": 20011}},  # looped path
    {"name": "narrow_rows", "kwargs": {"rows": 33, "cols": 48}, "init_kwargs": {"cols": 48}},  # rows per program
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
