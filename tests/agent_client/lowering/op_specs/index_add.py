import torch
import torch.nn as nn
import torch.nn.functional as F
class Model(nn.Module):
    def __init__(self):
        super(Model, self).__init__()
    def forward(self, x, y=None, z=None):
        return torch.zeros(8, 5).index_add(0, torch.tensor([0, 2, 2, 7]), x)
def get_inputs():
    return [torch.randn(4, 5)]
def get_init_inputs():
    return []
