import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, in_f, out_f):
        super().__init__()
        self.v = nn.Parameter(torch.randn(out_f, in_f))
        self.g = nn.Parameter(torch.ones(out_f, 1))
        self.b = nn.Parameter(torch.zeros(out_f))

    def forward(self, x):
        w = self.g * self.v / self.v.norm(dim=1, keepdim=True)
        return F.gelu(F.linear(x, w, self.b))


def get_inputs():
    return [torch.randn(32, 64)]


def get_init_inputs():
    return [64, 96]
