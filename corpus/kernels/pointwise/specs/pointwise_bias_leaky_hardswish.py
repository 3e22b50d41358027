"""Pointwise chain after a convolution: per-channel bias -> leaky relu -> hardswish -> scale (fp32).

GPU shape: x 64 x 96 x 112 x 112 fp32 (308 MiB read + 308 MiB written), bias (96, 1, 1) broadcast
over the spatial dims: the kernel computes the channel of each element as (i // (H*W)) % C.
"""

import torch
import torch.nn.functional as F
from torch import nn

SIZE = "full"  # "full" | "tiny": the CPU tests (Triton interpreter) load a copy with SIZE = "tiny"
SHAPES = {"full": {"batch": 64, "channels": 96, "height": 112, "width": 112}, "tiny": {"batch": 2, "channels": 4, "height": 8, "width": 8}}
BATCH, CHANNELS, HEIGHT, WIDTH = SHAPES[SIZE]["batch"], SHAPES[SIZE]["channels"], SHAPES[SIZE]["height"], SHAPES[SIZE]["width"]
DTYPE = torch.float32
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"  # GB-sized inputs are made where they are used
CHAIN = (("bias",), ("leaky_relu", 0.01), ("hardswish",), ("mul", 0.5))
VARIANTS = [
    {"name": "odd_channels", "kwargs": {"batch": 2, "channels": 5, "height": 7, "width": 9},
     "init_kwargs": {"channels": 5}},  # odd channel count and plane size
]

_TORCH_OPS = {
    "leaky_relu": lambda x, s: F.leaky_relu(x, s),
    "hardswish": lambda x: F.hardswish(x),
    "mul": lambda x, s: x * s,
}


class Model(nn.Module):
    """Adds a learned per-channel bias, then applies the chain `ops` left to right."""

    def __init__(self, ops, bias_shape):
        super().__init__()
        self.ops = ops
        self.bias = nn.Parameter(torch.randn(bias_shape))

    def forward(self, x):
        for name, *args in self.ops:
            x = x + self.bias if name == "bias" else _TORCH_OPS[name](x, *args)
        return x


def get_inputs(batch=BATCH, channels=CHANNELS, height=HEIGHT, width=WIDTH):
    return [torch.randn(batch, channels, height, width, dtype=DTYPE, device=DEVICE) * 4.0]


def get_init_inputs(channels=CHANNELS):
    return [CHAIN, (channels, 1, 1)]
