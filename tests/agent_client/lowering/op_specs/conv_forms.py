import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Plain convolutions of each form at odd sizes (partial tiles of pixels, channels and K)."""

    def __init__(self):
        super(Model, self).__init__()
        self.c1 = nn.Conv1d(16, 24, 3, stride=3, dilation=4)
        self.c2 = nn.Conv2d(32, 40, (3, 2), stride=(2, 1), padding=(1, 0), dilation=(2, 1), groups=2)
        self.c3 = nn.Conv3d(3, 16, 3, padding=1)  # 3 input channels: the flat K walk
        self.c4 = nn.Conv2d(3, 20, 5, stride=2, padding=2, bias=False)
        self.dw = nn.Conv2d(32, 32, 3, padding=1, groups=32)  # depthwise: the direct kernel
        self.c5 = nn.Conv3d(8, 32, (1, 3, 2), padding=(0, 1, 1), groups=2)

    def forward(self, a, b, c):
        return self.c1(a), self.c2(b), self.c3(c), self.c4(b[:, :3]), self.dw(b), self.c5(c.repeat(1, 3, 1, 1, 1)[:, :8])


def get_inputs():
    return [torch.randn(2, 16, 41), torch.randn(2, 32, 9, 11), torch.randn(1, 3, 5, 6, 7)]


def get_init_inputs():
    return []
