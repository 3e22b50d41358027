import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        m = torch.max(x, dim=self.dim)
        return m.values * 2, m.indices


def get_inputs():
    return [torch.randn(16, 128, 32)]


def get_init_inputs():
    return [1]
