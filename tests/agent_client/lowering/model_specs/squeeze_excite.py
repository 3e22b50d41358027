import torch
import torch.nn as nn
import torch.nn.functional as F


class SqueezeExcite(nn.Module):
    def __init__(self, channels, rd_channels):
        super().__init__()
        self.conv_reduce = nn.Conv2d(channels, rd_channels, 1, bias=True)
        self.act1 = nn.ReLU(inplace=True)
        self.conv_expand = nn.Conv2d(rd_channels, channels, 1, bias=True)
        self.gate = nn.Sigmoid()

    def forward(self, x):
        x_se = x.mean((2, 3), keepdim=True)
        x_se = self.conv_reduce(x_se)
        x_se = self.act1(x_se)
        x_se = self.conv_expand(x_se)
        return x * self.gate(x_se)


class Model(nn.Module):
    def __init__(self, channels=32):
        super().__init__()
        self.se = SqueezeExcite(channels, channels // 4)

    def forward(self, x):
        return F.silu(self.se(x))


def get_inputs():
    return [torch.randn(4, 32, 16, 16)]


def get_init_inputs():
    return [32]
