import torch
import torch.nn as nn
import torch.nn.functional as F
class Model(nn.Module):
    def __init__(self):
        super(Model, self).__init__()
    def forward(self, x, y=None, z=None):
        return torch.zeros(4, 8).scatter_add(1, y, x)
def get_inputs():
    return [torch.randn(4, 6), torch.randint(0, 8, (4, 6))]
def get_init_inputs():
    return []
