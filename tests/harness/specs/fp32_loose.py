"""Test spec: fp32 fused multiply-add with a loose tolerance (as KernelBench uses), for precision checks."""

import torch
from torch import nn

TOLERANCE = 2e-2


class Model(nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        return x * y + z


def get_inputs(n: int = 512):
    # Non-negative: x*y+z never cancels, so a bf16 computation's error (under 3 * 2^-7 * out) stays inside the
    # loose tolerance (0.02 + 0.02 * out) and only the precision check can catch it. With signed inputs a
    # cancelling element sometimes failed the tolerance first (a CI run saw "wrong" instead of "rejected").
    return [torch.rand(n), torch.rand(n), torch.rand(n)]


def get_init_inputs():
    return []
