import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, k):
        super().__init__()
        self.k = k

    def forward(self, x, y):
        d = torch.cdist(x, y)
        vals, idx = d.topk(self.k, dim=-1, largest=False)
        return vals.mean(-1), idx


def get_inputs():
    return [torch.randn(2, 64, 16), torch.randn(2, 80, 16)]


def get_init_inputs():
    return [4]
