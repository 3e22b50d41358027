"""Test spec with a step after a rounded product (x * 3 > 0.9): at x = fp32(0.3) the reference's rounding lands
above the step, and a candidate that compares x > 0.3 itself lands below it. Only elements within a few ulps of
the step can differ; the float64 reference moves there when the input moves by a few ulps."""

import torch
from torch import nn


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.where(x * 3.0 > 0.9, 1.0, -1.0)


def get_inputs(n: int = 50000):
    x = torch.rand(n)
    x[:13] = torch.tensor(0.3) + torch.arange(-6, 7) * 2.0 ** -25  # fp32(0.3) and its neighbours
    x[50] = 0.7  # far from the step
    return [x]


def get_init_inputs():
    return []
