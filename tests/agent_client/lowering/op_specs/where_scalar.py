import torch
import torch.nn as nn
import torch.nn.functional as F
class Model(nn.Module):
    def __init__(self):
        super(Model, self).__init__()
    def forward(self, x, y=None, z=None):
        return torch.where(x > 0, x, 0.1 * x).clamp_max(1.0)
def get_inputs():
    return [torch.randn(4, 11)]
def get_init_inputs():
    return []
