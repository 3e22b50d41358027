import torch
import torch.nn as nn


class Model(nn.Module):
    """Batch norm in training mode: a row per channel over the batch and the spatial dims (not contiguous)."""

    def __init__(self, num_features: int):
        super(Model, self).__init__()
        self.bn = nn.BatchNorm2d(num_features=num_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.bn(x)


batch_size = 4
features = 3
dim1 = 9
dim2 = 19


def get_inputs():
    return [torch.randn(batch_size, features, dim1, dim2) * 2.0 + 0.5]


def get_init_inputs():
    return [features]
