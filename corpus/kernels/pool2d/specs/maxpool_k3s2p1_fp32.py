"""Spec: 2-D max pooling, kernel 3, stride 2, padding 1 (the ResNet stem pool), fp32, 32 x 64 x 224 x 224.

KernelBench format plus the harness conventions (harness/spec.py): DTYPE, VARIANTS, keyword sizes.
SIZE picks the default shape; the CPU tests load a copy of this file with SIZE = "tiny".
"""

import torch
from torch import nn

SIZE = "full"  # "full" | "tiny" (tiny: for the Triton interpreter on CPU)
SHAPES = {
    "full": {"batch": 32, "channels": 64, "height": 224, "width": 224},
    "tiny": {"batch": 2, "channels": 3, "height": 16, "width": 24},
}
KIND = "max"
KERNEL_SIZE = 3
STRIDE = 2
PADDING = 1
DTYPE = "float32"
VARIANTS = [  # checked too (not timed): odd sizes give partial tiles and dropped edge rows/columns
    {"name": "odd", "kwargs": {"batch": 1, "channels": 5, "height": 13, "width": 71}},
]


class Model(nn.Module):
    def __init__(self, kind: str, kernel_size: int, stride: int, padding: int = 0):
        super().__init__()
        pool = nn.MaxPool2d if kind == "max" else nn.AvgPool2d
        self.pool = pool(kernel_size, stride=stride, padding=padding)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pool(x)


def get_inputs(batch: int = SHAPES[SIZE]["batch"], channels: int = SHAPES[SIZE]["channels"],
               height: int = SHAPES[SIZE]["height"], width: int = SHAPES[SIZE]["width"]):
    return [torch.randn(batch, channels, height, width)]


def get_init_inputs():
    return [KIND, KERNEL_SIZE, STRIDE, PADDING]
