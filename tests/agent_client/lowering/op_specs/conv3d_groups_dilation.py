import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super(Model, self).__init__()
        self.conv = nn.Conv3d(8, 16, 3, groups=4, dilation=2, padding=2)

    def forward(self, x):
        return torch.sigmoid(self.conv(x))


def get_inputs():
    return [torch.randn(2, 8, 8, 8, 8)]


def get_init_inputs():
    return []
