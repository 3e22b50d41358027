import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super(Model, self).__init__()
        self.bil = nn.Bilinear(8, 6, 4)

    def forward(self, x, y=None, z=None):
        return self.bil(x, y)


def get_inputs():
    return [torch.randn(5, 8), torch.randn(5, 6)]


def get_init_inputs():
    return []
