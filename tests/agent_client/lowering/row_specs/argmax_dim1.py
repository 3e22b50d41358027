import torch
import torch.nn as nn


class Model(nn.Module):
    """Argmax over the middle dim of (B, N, M), with ties (the first index wins)."""

    def __init__(self, dim: int):
        super(Model, self).__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.argmax(x, dim=self.dim)


batch_size = 2
dim1 = 300
dim2 = 37


def get_inputs():
    return [torch.randint(0, 50, (batch_size, dim1, dim2)).float()]


def get_init_inputs():
    return [1]
