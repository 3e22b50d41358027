import torch
import torch.nn as nn


class Model(nn.Module):
    """Instance norm: a row per (sample, channel) of its spatial values."""

    def __init__(self, num_features: int):
        super(Model, self).__init__()
        self.inorm = nn.InstanceNorm2d(num_features=num_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.inorm(x)


batch_size = 2
features = 3
dim1 = 20
dim2 = 35


def get_inputs():
    return [torch.rand(batch_size, features, dim1, dim2) * 4.0 - 1.0]


def get_init_inputs():
    return [features]
