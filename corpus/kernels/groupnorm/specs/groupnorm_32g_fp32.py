"""Group norm, 32 groups over 512 channels of 64 x 64 maps: 32 x 512 x 64 x 64 fp32 (256 MiB in + out).

Each group holds 16 x 64 x 64 = 65536 elements (256 KiB): more than one program keeps in registers.
Weight and bias are random so a kernel that mixes up channels fails.
"""

import torch
import torch.nn.functional as F
from torch import nn

SIZE = "full"  # "full" | "tiny": the CPU tests (Triton interpreter) load a copy with SIZE = "tiny"
SHAPES = {"full": {"batch": 32, "channels": 512, "height": 64, "width": 64, "groups": 32},
          "tiny": {"batch": 2, "channels": 8, "height": 64, "width": 64, "groups": 2}}
BATCH, CHANNELS = SHAPES[SIZE]["batch"], SHAPES[SIZE]["channels"]
HEIGHT, WIDTH, GROUPS = SHAPES[SIZE]["height"], SHAPES[SIZE]["width"], SHAPES[SIZE]["groups"]
DTYPE = torch.float32
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"  # GB-sized inputs are made where they are used
EPS = 1e-5
VARIANTS = [
    {"name": "odd_maps", "kwargs": {"batch": 3, "channels": 6, "height": 7, "width": 5},
     "init_kwargs": {"groups": 3, "channels": 6}},  # fused path, 70-element groups
    {"name": "looped_ragged", "kwargs": {"batch": 1, "channels": 4, "height": 91, "width": 97},
     "init_kwargs": {"groups": 2, "channels": 4}},  # looped path, group of 17654 elements
]


class Model(nn.Module):
    def __init__(self, num_groups, num_channels, eps=EPS):
        super().__init__()
        self.num_groups = num_groups
        self.weight = nn.Parameter(torch.randn(num_channels))
        self.bias = nn.Parameter(torch.randn(num_channels))
        self.eps = eps

    def forward(self, x):
        return F.group_norm(x, self.num_groups, self.weight, self.bias, self.eps)


def get_inputs(batch=BATCH, channels=CHANNELS, height=HEIGHT, width=WIDTH):
    return [torch.randn(batch, channels, height, width, dtype=DTYPE, device=DEVICE) * 2.0 + 0.5]


def get_init_inputs(groups=GROUPS, channels=CHANNELS):
    return [groups, channels, EPS]
