import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.fc = nn.Linear(d_in, d_out).to(torch.bfloat16)  # as model code casts a layer

    def forward(self, x):
        return F.gelu(self.fc(x))


def get_inputs():
    return [torch.randn(32, 64, dtype=torch.bfloat16)]


def get_init_inputs():
    return [64, 48]
