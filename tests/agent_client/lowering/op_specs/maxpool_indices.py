import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super(Model, self).__init__()
        self.pool = nn.MaxPool2d(2, return_indices=True)

    def forward(self, x):
        out, idx = self.pool(x)
        return out, idx


def get_inputs():
    return [torch.randn(2, 4, 16, 16)]


def get_init_inputs():
    return []
