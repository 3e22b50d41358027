import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super(Model, self).__init__()
        self.conv = nn.Conv2d(4, 8, 3, padding=1).half()

    def forward(self, x, y=None, z=None):
        return self.conv(x)


def get_inputs():
    return [torch.randn(2, 4, 8, 8, dtype=torch.float16)]


def get_init_inputs():
    return []
