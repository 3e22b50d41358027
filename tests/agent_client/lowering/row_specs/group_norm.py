import torch
import torch.nn as nn


class Model(nn.Module):
    """Group norm: a row per (sample, group) of its channels' values."""

    def __init__(self, num_groups: int, num_features: int):
        super(Model, self).__init__()
        self.gn = nn.GroupNorm(num_groups=num_groups, num_channels=num_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.gn(x)


batch_size = 5
features = 4
num_groups = 2
dim1 = 10
dim2 = 15


def get_inputs():
    return [torch.randn(batch_size, features, dim1, dim2) * 3.0 + 1.0]


def get_init_inputs():
    return [num_groups, features]
