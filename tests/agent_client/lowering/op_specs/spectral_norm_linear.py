import torch
import torch.nn as nn


class Model(nn.Module):
    """A Linear under spectral_norm's parametrization: a power iteration step on its u and v buffers."""

    def __init__(self):
        super().__init__()
        self.lin = nn.utils.parametrizations.spectral_norm(nn.Linear(16, 8))

    def forward(self, x):
        return torch.relu(self.lin(x))


def get_inputs():
    return [torch.randn(4, 16)]


def get_init_inputs():
    return []
