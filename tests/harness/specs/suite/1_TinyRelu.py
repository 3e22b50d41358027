"""Suite test spec (KernelBench-style name): relu on a tiny vector."""

import torch
from torch import nn

N = 200


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)


def get_inputs():
    return [torch.randn(N)]


def get_init_inputs():
    return []
