import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super(Model, self).__init__()
        self.attn = nn.MultiheadAttention(64, 4, batch_first=True)

    def forward(self, x, y=None, z=None):
        out, w = self.attn(x, x, x, need_weights=True)
        return out, w


def get_inputs():
    return [torch.randn(2, 10, 64)]


def get_init_inputs():
    return []
