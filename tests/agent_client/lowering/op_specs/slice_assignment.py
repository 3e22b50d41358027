import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        out = torch.zeros_like(x)
        out[:, 0] = x[:, 0]
        out[:, 1:] = x[:, 1:] - x[:, :-1]
        out += 1.0
        scale = x.size(-1) ** -0.5
        return out * scale


def get_inputs():
    return [torch.randn(16, 24)]


def get_init_inputs():
    return []
