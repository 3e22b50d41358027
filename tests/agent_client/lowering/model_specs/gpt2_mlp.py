import math
import torch
import torch.nn as nn
class TanhGelu(nn.Module):
    def forward(self, t):
        inner = math.sqrt(2.0 / math.pi) * (t + 0.044715 * torch.pow(t, 3.0))
        return 0.5 * t * (1.0 + torch.tanh(inner))
class Model(nn.Module):
    def __init__(self, width):
        super(Model, self).__init__()
        self.up = nn.Linear(width, 4 * width)
        self.down = nn.Linear(4 * width, width)
        self.act = TanhGelu()
    def forward(self, h):
        return self.down(self.act(self.up(h)))
def get_inputs():
    return [torch.randn(2, 16, 32)]
def get_init_inputs():
    return [32]
