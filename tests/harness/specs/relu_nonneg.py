"""Test spec: relu of non-negative inputs, whose output equals its input; a candidate may not hand back the
input itself (outputs must not alias inputs), though every value would be right."""

import torch
from torch import nn


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)


def get_inputs(n: int = 300):
    return [torch.rand(n) + 0.5]


def get_init_inputs():
    return []
