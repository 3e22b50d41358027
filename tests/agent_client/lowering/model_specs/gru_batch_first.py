import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(8, 16, batch_first=True)

    def forward(self, x):
        out, h = self.gru(x)
        return out, h


def get_inputs():
    return [torch.randn(2, 5, 8)]


def get_init_inputs():
    return []
