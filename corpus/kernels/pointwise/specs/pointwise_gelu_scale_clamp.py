"""Pointwise chain on a wide fp32 activation: gelu (exact) -> scale -> shift -> clamp.

GPU shape: 16384 x 8192 fp32, 512 MiB read + 512 MiB written. Eager runs four kernels (four round
trips to memory); a fused kernel makes one.
"""

import torch
import torch.nn.functional as F
from torch import nn

SIZE = "full"  # "full" | "tiny": the CPU tests (Triton interpreter) load a copy with SIZE = "tiny"
SHAPES = {"full": {"rows": 16384, "cols": 8192}, "tiny": {"rows": 4, "cols": 512}}
ROWS, COLS = SHAPES[SIZE]["rows"], SHAPES[SIZE]["cols"]
DTYPE = torch.float32
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"  # GB-sized inputs are made where they are used
CHAIN = (("gelu",), ("mul", 1.702), ("add", -0.25), ("clamp", -1.0, 3.0))
VARIANTS = [
    {"name": "ragged_tail", "kwargs": {"rows": 3, "cols": 1000}},  # ragged tail: 3000 elements is not a multiple of any block
    {"name": "under_one_block", "kwargs": {"rows": 1, "cols": 7}},  # fewer elements than one block
]

_TORCH_OPS = {
    "relu": lambda x: F.relu(x),
    "gelu": lambda x: F.gelu(x),
    "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),
    "silu": lambda x: F.silu(x),
    "mish": lambda x: F.mish(x),
    "softplus": lambda x: F.softplus(x),
    "sigmoid": lambda x: torch.sigmoid(x),
    "tanh": lambda x: torch.tanh(x),
    "hardswish": lambda x: F.hardswish(x),
    "leaky_relu": lambda x, s: F.leaky_relu(x, s),
    "clamp": lambda x, lo, hi: torch.clamp(x, lo, hi),
    "mul": lambda x, s: x * s,
    "add": lambda x, s: x + s,
}


class Model(nn.Module):
    """Applies the chain `ops` left to right: each op is (name, *scalar_args)."""

    def __init__(self, ops):
        super().__init__()
        self.ops = ops

    def forward(self, x):
        for name, *args in self.ops:
            x = _TORCH_OPS[name](x, *args)
        return x


def get_inputs(rows=ROWS, cols=COLS):
    return [torch.randn(rows, cols, dtype=DTYPE, device=DEVICE) * 2.0]


def get_init_inputs():
    return [CHAIN]
