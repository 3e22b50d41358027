import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        pass

    def forward(self, a, b):
        return torch.bmm(a.transpose(1, 2), b)


def get_inputs():
    return [torch.rand(3, 45, 37), torch.rand(3, 45, 29)]


def get_init_inputs():
    return []
