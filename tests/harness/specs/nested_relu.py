"""Test spec: a list of tensors as one argument (as a feature pyramid takes its maps), a tuple out; the
guards must see the nested tensors as they see top-level ones."""

import torch
from torch import nn


class Model(nn.Module):
    def forward(self, xs: list) -> tuple:
        return tuple(torch.relu(x) for x in xs)


def get_inputs(n: int = 300):
    return [[torch.rand(n) + 0.5, torch.rand(n // 2) + 0.5]]


def get_init_inputs():
    return []
