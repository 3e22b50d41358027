"""Spec: 2-D average pooling, kernel 3, stride 1, padding 1 (padding counts in the divisor), bf16, 128 x 256 x 56 x 56
(196 MiB read, 196 MiB written: four times the bytes of avgpool_k3s1p1_bf16, where a device copy of the same
bytes reaches only 84% of the large-copy rate; a copy of these 392 MiB reaches 96%:
benchmarks/results/copy_at_size-20261201T104409Z.json in commit ab220786f).

KernelBench format plus the harness conventions (harness/spec.py): DTYPE, VARIANTS, keyword sizes.
SIZE picks the default shape; the CPU tests load a copy of this file with SIZE = "tiny".
"""

import torch
from torch import nn

SIZE = "full"  # "full" | "tiny" (tiny: for the Triton interpreter on CPU)
SHAPES = {
    "full": {"batch": 128, "channels": 256, "height": 56, "width": 56},
    "tiny": {"batch": 2, "channels": 3, "height": 16, "width": 24},
}
KIND = "avg"
KERNEL_SIZE = 3
STRIDE = 1
PADDING = 1
DTYPE = "bfloat16"
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
