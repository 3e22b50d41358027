"""A tiny spec for the agent client's tests: negatives to zero, then doubled (KernelBench format)."""

import torch
from torch import nn

N = 300  # not a multiple of the block sizes the test kernels use: masks matter


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x) * 2.0


def get_inputs():
    return [torch.randn(N)]


def get_init_inputs():
    return []
