import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.fc = nn.Linear(d_in, d_out)

    def forward(self, x, r):
        y = self.fc(x)
        y = y * torch.sigmoid(y) * 2.0
        return y + r


def get_inputs():
    return [torch.rand(16, 40), torch.rand(16, 24)]


def get_init_inputs():
    return [40, 24]
