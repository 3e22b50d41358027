"""Pointwise chain in bf16: silu -> mish -> softplus -> gelu (tanh) -> sigmoid -> tanh -> relu.

GPU shape: 32768 x 8192 bf16, 512 MiB read + 512 MiB written; every op runs in fp32 registers and
rounds to bf16 once at the end (eager rounds after each op, so the tolerance is bf16's).
"""

import torch
import torch.nn.functional as F
from torch import nn

SIZE = "full"  # "full" | "tiny": the CPU tests (Triton interpreter) load a copy with SIZE = "tiny"
SHAPES = {"full": {"rows": 32768, "cols": 8192}, "tiny": {"rows": 4, "cols": 512}}
ROWS, COLS = SHAPES[SIZE]["rows"], SHAPES[SIZE]["cols"]
DTYPE = torch.bfloat16
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"  # GB-sized inputs are made where they are used
CHAIN = (("silu",), ("mish",), ("softplus",), ("gelu_tanh",), ("sigmoid",), ("tanh",), ("relu",))
VARIANTS = [
    {"name": "ragged_tail", "kwargs": {"rows": 5, "cols": 301}},  # ragged tail
]

_TORCH_OPS = {
    "relu": lambda x: F.relu(x),
    "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),
    "silu": lambda x: F.silu(x),
    "mish": lambda x: F.mish(x),
    "softplus": lambda x: F.softplus(x),
    "sigmoid": lambda x: torch.sigmoid(x),
    "tanh": lambda x: torch.tanh(x),
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
    return [torch.randn(rows, cols, dtype=DTYPE, device=DEVICE) * 3.0]


def get_init_inputs():
    return [CHAIN]
