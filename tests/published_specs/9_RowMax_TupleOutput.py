import torch
import torch.nn as nn


class Model(nn.Module):
    """
    Maximum along a dimension, returning the values and their int64 indices (a tuple output).
    """

    def __init__(self, dim):
        super(Model, self).__init__()
        self.dim = dim

    def forward(self, x):
        values, indices = torch.max(x, dim=self.dim)
        return values, indices


batch_size = 6
dim1 = 50
dim = 1


def get_inputs():
    return [torch.randn(batch_size, dim1)]


def get_init_inputs():
    return [dim]
