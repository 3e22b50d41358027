import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super(Model, self).__init__()
        self.lin = nn.Linear(32, 48, bias=False).to(torch.bfloat16)

    def forward(self, x, y=None, z=None):
        return self.lin(x)


def get_inputs():
    return [torch.randn(4, 32, dtype=torch.bfloat16)]


def get_init_inputs():
    return []
