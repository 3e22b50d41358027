import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super(Model, self).__init__()

    def forward(self, x):
        norm3 = torch.linalg.vector_norm(x, ord=3, dim=-1)
        odd = x.pow(5) + torch.pow(x, -3.0)
        frac = x.abs().pow(1.5) + (x + 4.0).pow(0.25) + x.pow(2.5).nan_to_num(-7.0)
        return norm3, odd, frac


def get_inputs():
    return [torch.randn(16, 40) + 0.05]


def get_init_inputs():
    return []
