"""Test spec whose output is zero by algebra (the mean of a group norm's output, as in KernelBench's 2/23): the
fp32 reference is rounding noise, which another summation order cannot match to 5%."""

import torch
from torch import nn


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return nn.functional.group_norm(x * 3.0 + 1.0, 4).mean(dim=(1, 2))


def get_inputs(batch: int = 16, channels: int = 8, length: int = 512):
    return [torch.randn(batch, channels, length)]


def get_init_inputs():
    return []
