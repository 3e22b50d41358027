import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, input_size=16, hidden=32):
        super().__init__()
        self.cell = nn.LSTMCell(input_size, hidden)

    def forward(self, x, h, c):
        h1, c1 = self.cell(x, (h, c))
        return h1, c1


def get_inputs():
    return [torch.randn(8, 16), torch.randn(8, 32), torch.randn(8, 32)]


def get_init_inputs():
    return []
