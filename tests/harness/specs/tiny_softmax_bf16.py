"""Test spec: row softmax in bfloat16. An honest kernel that computes in float32 and stores bfloat16 is off by
a bf16 rounding (~4e-3) here and there: right under bf16's tolerance, wrong under float32's."""

import torch
from torch import nn

DTYPE = "bfloat16"


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=-1)


def get_inputs(rows: int = 4, cols: int = 100):
    return [torch.randn(rows, cols) * 2.0]


def get_init_inputs():
    return []
