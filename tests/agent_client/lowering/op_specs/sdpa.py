import torch
import torch.nn as nn
import torch.nn.functional as F
class Model(nn.Module):
    def __init__(self):
        super(Model, self).__init__()
    def forward(self, x, y=None, z=None):
        return F.scaled_dot_product_attention(x, y, z, is_causal=True)
def get_inputs():
    return [torch.randn(2, 4, 16, 8), torch.randn(2, 4, 16, 8), torch.randn(2, 4, 16, 8)]
def get_init_inputs():
    return []
