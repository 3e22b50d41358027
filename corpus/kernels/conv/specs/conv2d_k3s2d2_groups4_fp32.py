"""Spec: 2-D convolution 64 -> 128 in 4 groups, kernel 3, stride 2, padding 2, dilation 2, float32, 16x64x128x128 -> 128 channels.

KernelBench format plus the harness conventions (harness/spec.py): DTYPE, VARIANTS, keyword sizes.
SIZE picks the default shape; the CPU tests load a copy of this file with SIZE = "tiny".
"""

import torch
from torch import nn

SIZE = "full"  # "full" | "tiny" (tiny: for the Triton interpreter on CPU)
SHAPES = {
    "full": {'batch': 16, 'cin': 64, 'cout': 128, 'spatial': (128, 128)},
    "tiny": {'batch': 2, 'cin': 32, 'cout': 64, 'spatial': (11, 10)},
}
DIMS, TRANSPOSED = 2, False
KERNEL_SIZE, STRIDE, PADDING, DILATION, GROUPS, OUTPUT_PADDING = 3, 2, 2, 2, 4, 0
DTYPE = "float32"
VARIANTS = [  # checked too (not timed): odd sizes leave partial tiles of output pixels and channels
    {"name": "odd", "kwargs": {'batch': 1, 'cin': 64, 'spatial': (9, 13)}, "init_kwargs": {'cin': 64, 'cout': 64}},
]


class Model(nn.Module):
    def __init__(self, dims: int, transposed: bool, in_channels: int, out_channels: int, kernel_size, stride=1,
                 padding=0, dilation=1, groups: int = 1, output_padding=0, bias: bool = True):
        super().__init__()
        if transposed:
            cls = (nn.ConvTranspose1d, nn.ConvTranspose2d, nn.ConvTranspose3d)[dims - 1]
            self.conv = cls(in_channels, out_channels, kernel_size, stride=stride, padding=padding,
                            output_padding=output_padding, groups=groups, bias=bias, dilation=dilation)
        else:
            cls = (nn.Conv1d, nn.Conv2d, nn.Conv3d)[dims - 1]
            self.conv = cls(in_channels, out_channels, kernel_size, stride=stride, padding=padding,
                            dilation=dilation, groups=groups, bias=bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


def get_inputs(batch: int = SHAPES[SIZE]["batch"], cin: int = SHAPES[SIZE]["cin"],
               spatial: tuple = SHAPES[SIZE]["spatial"]):
    return [torch.randn(batch, cin, *spatial)]


def get_init_inputs(cin: int = SHAPES[SIZE]["cin"], cout: int = SHAPES[SIZE]["cout"]):
    return [DIMS, TRANSPOSED, cin, cout, KERNEL_SIZE, STRIDE, PADDING, DILATION, GROUPS, OUTPUT_PADDING]
