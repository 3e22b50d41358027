import torch
import torch.nn as nn
import torch.nn.functional as F
class Model(nn.Module):
    def __init__(self):
        super(Model, self).__init__()
    def forward(self, x, y=None, z=None):
        x = x.clone()
        x[x < 0] = 0.0
        return x * 2
def get_inputs():
    return [torch.randn(4, 8)]
def get_init_inputs():
    return []
