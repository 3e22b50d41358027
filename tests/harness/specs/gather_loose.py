"""Test spec: rows of a parameter table gathered by integer indices, fp32, with a loose tolerance (as
KernelBench uses). Only the parameters can be rounded to bf16 here (the indices are integers, and many are
past 256, where bf16 stops holding every integer), so the precision check must round the parameters."""

import torch
from torch import nn

TOLERANCE = 2e-2
NUM_ROWS, DIM = 1000, 32


class Model(nn.Module):
    def __init__(self, num_rows: int, dim: int):
        super().__init__()
        self.table = nn.Parameter(torch.rand(num_rows, dim) + 1.0)  # in [1, 2): bf16 rounding is 2^-8 of it

    def forward(self, indices: torch.Tensor) -> torch.Tensor:
        return self.table[indices]


def get_inputs(n: int = 64):
    return [torch.randint(0, NUM_ROWS, (n,))]


def get_init_inputs():
    return [NUM_ROWS, DIM]
