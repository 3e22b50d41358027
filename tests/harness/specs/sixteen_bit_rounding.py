"""Test spec: a bf16 reference that rounds an intermediate, (x + 1000) - 1000. bf16 holds 1000 + x only to a
multiple of 4, so the reference gives 0 where x is small and wrong by about x elsewhere; a candidate that keeps
the intermediate in fp32 gives x, the float64 reference's value. Most x are far below the tolerance; a few
(every 97th) are 1.5, where the two differ by more than the tolerance."""

import torch
from torch import nn

DTYPE = "bfloat16"


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (x + 1000.0) - 1000.0


def get_inputs(n: int = 5000):
    x = torch.rand(n) * 1e-3
    x[::97] = 1.5
    return [x]


def get_init_inputs():
    return []
